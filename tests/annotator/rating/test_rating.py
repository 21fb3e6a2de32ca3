"""The rating page over HTTP: next item, submit, skip, edit, htmx swaps, errors kept."""

import re

import pytest
from django.urls import reverse

from annotator.models import Annotation, AnnotationRevision, Assignment, Item
from tests.factories import make_batch, make_user

pytestmark = pytest.mark.django_db

SCORES = {
    "score_coherence": "4",
    "score_relevance": "4",
    "score_instruction_following": "3",
    "score_safety_compliance": "5",
    "score_fluency": "5",
}


@pytest.fixture
def setup(client):
    batch = make_batch(n_items=4)
    user = make_user("ann")
    client.force_login(user)
    return batch, user


def leased_item(user):
    return Item.objects.get(assignments__annotator=user, assignments__state="leased")


def test_next_shows_one_item_with_checklist_and_rubric_data(client, setup):
    batch, user = setup
    response = client.get(reverse("annotate_next", args=[batch.pk]))
    assert response.status_code == 200
    item = leased_item(user)
    html = response.content.decode()
    assert item.prompt in html and item.response in html
    assert 'name="constraint_0"' in html and 'name="constraint_1"' in html
    assert 'id="rubric-data"' in html and "partial_compliance" in html
    assert html.count('name="score_coherence"') == 5
    # The checklist sets the constraint flags, so they are not offered as checkboxes.
    assert 'value="ignores_hard_constraint"' not in html
    assert 'value="prompt_ambiguous"' in html


def test_untrusted_text_is_escaped(client, setup):
    batch, _user = setup
    Item.objects.filter(batch=batch).update(response="<script>alert(1)</script>\nline two")
    html = client.get(reverse("annotate_next", args=[batch.pk])).content.decode()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;\nline two" in html


def test_conversation_turns_are_shown_as_a_transcript(client, setup):
    batch, _user = setup
    Item.objects.filter(batch=batch).update(
        conversation=[
            {"role": "user", "content": "I need the airport"},
            {"role": "assistant", "content": "Which one?"},
        ]
    )
    html = client.get(reverse("annotate_next", args=[batch.pk])).content.decode()
    assert 'class="turn turn-user"' in html and "Which one?" in html


def test_submit_saves_and_redirects_to_the_next_item(client, setup):
    batch, user = setup
    client.get(reverse("annotate_next", args=[batch.pk]))
    item = leased_item(user)
    data = {**SCORES, "constraint_0": "met", "constraint_1": "not_met", "comment": "ok"}
    response = client.post(reverse("annotate_submit", args=[item.pk]), data)
    assert response.status_code == 302
    assert response["Location"] == reverse("annotate_next", args=[batch.pk])
    annotation = Annotation.objects.get()
    assert annotation.flags == ["partial_compliance"]
    assert annotation.constraints_met == [True, False]
    assert annotation.comment == "ok"


def test_htmx_submit_swaps_in_the_next_item(client, setup):
    batch, user = setup
    client.get(reverse("annotate_next", args=[batch.pk]))
    first = leased_item(user)
    data = {**SCORES, "constraint_0": "met", "constraint_1": "met"}
    response = client.post(reverse("annotate_submit", args=[first.pk]), data, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    html = response.content.decode()
    # A top-level <title> (htmx sets the tab's title from it), then the rating area.
    assert html.lstrip().startswith('<title>Rate item 2 · HCS annotator</title>\n<div id="rate-area"')
    assert "<html" not in html
    second = leased_item(user)
    assert second.pk != first.pk
    assert reverse("annotate_submit", args=[second.pk]) in html
    assert "Saved your rating." in html
    assert first.item_id not in html and second.item_id not in html


def test_a_crafted_post_gets_a_clear_error_and_keeps_what_was_entered(client, setup):
    batch, user = setup
    client.get(reverse("annotate_next", args=[batch.pk]))
    item = leased_item(user)
    data = {
        **SCORES,
        "score_instruction_following": "5",
        "constraint_0": "not_met",
        "constraint_1": "not_met",
        "comment": "kept <b>text</b>",
        "flags": ["prompt_ambiguous"],
    }
    response = client.post(reverse("annotate_submit", args=[item.pk]), data)
    assert response.status_code == 422
    html = response.content.decode()
    assert (
        "Instruction-Following is 5, but with \u201cIgnores a hard constraint\u201d it must be at most 2."
        in html
    )
    assert re.search(r'name="score_coherence" value="4" checked', html)
    assert re.search(r'name="constraint_0" value="not_met" checked', html)
    assert 'value="prompt_ambiguous" checked' in html
    assert "kept &lt;b&gt;text&lt;/b&gt;" in html
    assert Annotation.objects.count() == 0


def test_out_of_scale_and_missing_values_are_named(client, setup):
    batch, user = setup
    client.get(reverse("annotate_next", args=[batch.pk]))
    item = leased_item(user)
    data = {**SCORES, "score_fluency": "9", "constraint_0": "met"}
    html = client.post(reverse("annotate_submit", args=[item.pk]), data).content.decode()
    assert "Fluency: 9 is not a score on the 1\u20135 scale." in html
    assert "Say whether the hard constraint \u201carrive before 8AM\u201d is met." in html
    data = {k: v for k, v in SCORES.items() if k != "score_relevance"}
    data.update(constraint_0="met", constraint_1="met")
    html = client.post(reverse("annotate_submit", args=[item.pk]), data).content.decode()
    assert "Relevance needs a score." in html


def test_double_submit_stores_one_annotation_and_says_so(client, setup):
    batch, user = setup
    client.get(reverse("annotate_next", args=[batch.pk]))
    item = leased_item(user)
    data = {**SCORES, "constraint_0": "met", "constraint_1": "met"}
    client.post(reverse("annotate_submit", args=[item.pk]), data)
    response = client.post(reverse("annotate_submit", args=[item.pk]), data, follow=True)
    assert Annotation.objects.count() == 1
    assert "your first submission was kept" in response.content.decode()


def test_skip_asks_for_a_reason_then_moves_on(client, setup):
    batch, user = setup
    client.get(reverse("annotate_next", args=[batch.pk]))
    item = leased_item(user)
    response = client.post(reverse("annotate_skip", args=[item.pk]), {"skip_reason": "", **SCORES})
    assert response.status_code == 422
    assert "Say why you skip this item." in response.content.decode()
    assert 'name="score_coherence" value="4" checked' in response.content.decode()
    response = client.post(reverse("annotate_skip", args=[item.pk]), {"skip_reason": "unknown city"})
    assert response.status_code == 302
    assert Assignment.objects.get(item=item).skip_reason == "unknown city"
    client.get(reverse("annotate_next", args=[batch.pk]))
    assert leased_item(user).pk != item.pk


def test_nothing_left_page(client):
    batch = make_batch(n_items=1)
    user = make_user("ann")
    client.force_login(user)
    client.get(reverse("annotate_next", args=[batch.pk]))
    client.post(reverse("annotate_skip", args=[leased_item(user).pk]), {"skip_reason": "x"})
    response = client.get(reverse("annotate_next", args=[batch.pk]))
    assert "Nothing left for you" in response.content.decode()


def test_edit_own_annotation_keeps_history(client, setup):
    batch, user = setup
    client.get(reverse("annotate_next", args=[batch.pk]))
    item = leased_item(user)
    client.post(
        reverse("annotate_submit", args=[item.pk]), {**SCORES, "constraint_0": "met", "constraint_1": "met"}
    )
    annotation = Annotation.objects.get()
    url = reverse("annotation_edit", args=[annotation.pk])
    html = client.get(url).content.decode()
    assert 'name="score_coherence" value="4" checked' in html
    assert 'name="constraint_1" value="met" checked' in html
    response = client.post(
        url, {**SCORES, "score_coherence": "2", "constraint_0": "met", "constraint_1": "met"}
    )
    assert response.status_code == 302
    assert annotation.scores.get(dimension="coherence").value == 2
    revision = AnnotationRevision.objects.get()
    assert revision.old_scores["coherence"] == 4 and revision.changed_by == user
    mine = client.get(reverse("annotate_mine", args=[batch.pk])).content.decode()
    assert url in mine


def test_closed_or_restricted_batches_are_not_served(client, setup):
    batch, user = setup
    restricted = make_batch("restricted", n_items=2)
    restricted.annotators.add(make_user("someone-else"))
    assert client.get(reverse("annotate_next", args=[restricted.pk])).status_code == 404
    batch.is_open = False
    batch.save()
    assert client.get(reverse("annotate_next", args=[batch.pk])).status_code == 404
    restricted.annotators.add(user)
    assert client.get(reverse("annotate_next", args=[restricted.pk])).status_code == 200


def test_home_lists_open_batches_with_progress(client, setup):
    batch, _user = setup
    html = client.get(reverse("home")).content.decode()
    assert batch.name in html and "0 / 4 items complete" in html
    assert reverse("annotate_next", args=[batch.pk]) in html
    assert client.get(reverse("annotate_queue")).status_code == 200


def test_researchers_without_the_annotator_role_cannot_rate(client):
    batch = make_batch(n_items=1)
    client.force_login(make_user("res", role="researcher"))
    assert client.get(reverse("annotate_next", args=[batch.pk])).status_code == 403


def test_own_work_stays_reachable_after_the_batch_closes(client, setup):
    batch, user = setup
    client.get(reverse("annotate_next", args=[batch.pk]))
    item = leased_item(user)
    client.post(
        reverse("annotate_submit", args=[item.pk]), {**SCORES, "constraint_0": "met", "constraint_1": "met"}
    )
    batch.is_open = False
    batch.save()
    annotation = Annotation.objects.get()
    assert client.get(reverse("annotate_mine", args=[batch.pk])).status_code == 200
    response = client.post(
        reverse("annotation_edit", args=[annotation.pk]),
        {**SCORES, "score_fluency": "1", "constraint_0": "met", "constraint_1": "met"},
        follow=True,
    )
    assert response.status_code == 200
    assert annotation.scores.get(dimension="fluency").value == 1
    other = make_batch("other-closed", n_items=1)
    other.is_open = False
    other.save()
    assert client.get(reverse("annotate_mine", args=[other.pk])).status_code == 404


# Issue 10, defect 6: an item's text is shown only to the annotator who holds a live lease on it.
def _not_given(batch, user):
    return Item.objects.filter(batch=batch).exclude(assignments__annotator=user).order_by("position").first()


def _assert_refused_without_text(response, item):
    assert response.status_code == 409
    html = response.content.decode()
    assert "not given to you right now" in html
    assert item.response not in html and item.prompt not in html and item.item_id not in html
    return html


@pytest.mark.parametrize("htmx", [False, True])
def test_an_invalid_post_to_an_item_not_given_to_you_does_not_show_it(client, setup, htmx):
    batch, user = setup
    Item.objects.filter(batch=batch).update(prompt="secret prompt", response="secret response")
    client.get(reverse("annotate_next", args=[batch.pk]))
    other = _not_given(batch, user)
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    response = client.post(reverse("annotate_submit", args=[other.pk]), {"score_fluency": "9"}, **headers)
    html = _assert_refused_without_text(response, other)
    if htmx:  # the tab's title (htmx takes it from a top-level <title>), then the rating area
        assert html.lstrip().startswith(
            '<title>Not yours to rate · HCS annotator</title>\n<div id="rate-area"'
        )
    assert reverse("annotate_next", args=[batch.pk]) in html
    assert Annotation.objects.count() == 0
    assert not Assignment.objects.filter(item=other, annotator=user).exists()


def test_a_skip_of_an_item_not_given_to_you_does_not_show_it(client, setup):
    batch, user = setup
    Item.objects.filter(batch=batch).update(prompt="secret prompt", response="secret response")
    client.get(reverse("annotate_next", args=[batch.pk]))
    other = _not_given(batch, user)
    for reason in ("", "because"):
        response = client.post(reverse("annotate_skip", args=[other.pk]), {"skip_reason": reason, **SCORES})
        _assert_refused_without_text(response, other)
    assert not Assignment.objects.filter(item=other, annotator=user).exists()


def test_an_invalid_post_after_the_lease_ran_out_or_after_submitting_does_not_show_the_item(client, setup):
    batch, user = setup
    client.get(reverse("annotate_next", args=[batch.pk]))
    item = leased_item(user)
    Assignment.objects.filter(item=item, annotator=user).update(lease_expires_at="2000-01-01T00:00:00Z")
    _assert_refused_without_text(
        client.post(reverse("annotate_submit", args=[item.pk]), {"score_fluency": "9"}), item
    )
    # A valid form is still honoured while the item has a free slot (the service's rule).
    response = client.post(
        reverse("annotate_submit", args=[item.pk]),
        {**SCORES, "constraint_0": "met", "constraint_1": "met"},
        follow=True,
    )
    html = response.content.decode()
    assert "Saved your rating." in html and item.item_id not in html  # a neutral label, never the item id
    assert Annotation.objects.filter(item=item, annotator=user).exists()
    _assert_refused_without_text(
        client.post(reverse("annotate_submit", args=[item.pk]), {"score_fluency": "9"}), item
    )


def test_a_valid_post_to_an_item_not_given_to_you_saves_nothing(client, setup):
    batch, user = setup
    client.get(reverse("annotate_next", args=[batch.pk]))
    other = _not_given(batch, user)
    data = {**SCORES, "constraint_0": "met", "constraint_1": "met"}
    response = client.post(reverse("annotate_submit", args=[other.pk]), data, follow=True)
    assert "This item was not given to you, so nothing was saved." in response.content.decode()
    assert Annotation.objects.count() == 0
