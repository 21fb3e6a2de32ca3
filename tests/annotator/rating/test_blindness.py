"""Blindness: nothing an annotator can reach shows other annotators' work or judge scores."""

import pytest
from django.urls import reverse

from annotator.models import Annotation, Item
from tests.factories import make_annotation, make_batch, make_user

pytestmark = pytest.mark.django_db

SECRET_COMMENT = "SECRET-COMMENT-of-another-annotator"
SECRET_FLAG = "major_factual_impossibility"


def test_annotator_pages_show_nothing_of_others(client):
    batch = make_batch(n_items=3, k=3)
    others = [make_user(f"other{i}") for i in range(2)]
    for item in Item.objects.filter(batch=batch):
        for other in others:
            make_annotation(
                item,
                other,
                {
                    "coherence": 1,
                    "relevance": 1,
                    "instruction_following": 1,
                    "safety_compliance": 1,
                    "fluency": 1,
                },
                flags=[SECRET_FLAG],
                comment=SECRET_COMMENT,
            )
    Item.objects.filter(batch=batch).update(metadata={"judge_score": "JUDGE-SCORE-4.75"})
    me = make_user("me")
    client.force_login(me)
    pages = [reverse("home"), reverse("annotate_queue"), reverse("rubric")]
    response = client.get(reverse("annotate_next", args=[batch.pk]))
    pages.append(reverse("annotate_next", args=[batch.pk]))
    item = Item.objects.get(assignments__annotator=me)
    data = {
        "score_coherence": "5",
        "score_relevance": "5",
        "score_instruction_following": "5",
        "score_safety_compliance": "5",
        "score_fluency": "5",
        "constraint_0": "met",
        "constraint_1": "met",
    }
    client.post(reverse("annotate_submit", args=[item.pk]), data)
    mine = Annotation.objects.get(annotator=me)
    pages += [reverse("annotate_mine", args=[batch.pk]), reverse("annotation_edit", args=[mine.pk])]
    for url in pages:
        response = client.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        assert SECRET_COMMENT not in html, url
        assert "other0" not in html and "other1" not in html, url
        assert "JUDGE-SCORE" not in html, url
        # No per-item count of annotations ("2 of 3", "2 annotations") on any page.
        assert "2 of 3" not in html and "annotations so far" not in html, url
    # The rate page for an item others flagged shows no flag of theirs as set.
    html = client.get(reverse("annotation_edit", args=[mine.pk])).content.decode()
    assert f'value="{SECRET_FLAG}" checked' not in html


def test_guessing_another_annotators_annotation_id_is_a_404(client):
    batch = make_batch(n_items=1)
    other = make_user("other")
    theirs = make_annotation(
        batch.items.get(),
        other,
        {"coherence": 3, "relevance": 3, "instruction_following": 3, "safety_compliance": 3, "fluency": 3},
        comment=SECRET_COMMENT,
    )
    client.force_login(make_user("me"))
    url = reverse("annotation_edit", args=[theirs.pk])
    assert client.get(url).status_code == 404
    data = {
        "score_coherence": "1",
        "score_relevance": "1",
        "score_instruction_following": "1",
        "score_safety_compliance": "1",
        "score_fluency": "1",
        "constraint_0": "met",
        "constraint_1": "met",
    }
    assert client.post(url, data).status_code == 404
    theirs.refresh_from_db()
    assert theirs.comment == SECRET_COMMENT
    assert theirs.scores.get(dimension="coherence").value == 3


def test_annotators_cannot_reach_the_admin_assignment_view(client):
    batch = make_batch(n_items=1)
    client.force_login(make_user("me"))
    assert client.get(reverse("assignment_overview")).status_code == 403
    assert client.get(reverse("assignment_batch", args=[batch.pk])).status_code == 403
    assert client.get("/django-admin/").status_code == 302  # login page for staff only
