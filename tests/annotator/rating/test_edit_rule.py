"""Ratings become final when quality control stops an annotator or their study visit ends: one
rule (``ratings_final``) behind the queue, the list of one's annotations, the edit page and the
service."""

from itertools import product

import pytest
from django.urls import reverse
from django.utils import timezone

from annotator.models import AnnotationRevision, AnnotatorStanding, Enrolment
from annotator.quality.services.exclusion import (
    annotator_block,
    annotator_exclude,
    annotator_include,
    annotator_screen_out,
)
from annotator.rating.selectors.queue import ratings_final
from annotator.rating.services.annotations import SubmissionRefused, annotation_update
from tests.factories import make_annotation, make_batch, make_user

pytestmark = pytest.mark.django_db

SCORES = {"coherence": 4, "relevance": 3, "instruction_following": 4, "safety_compliance": 5, "fluency": 4}
FORM = {
    "score_coherence": "1",
    "score_relevance": "1",
    "score_instruction_following": "1",
    "score_safety_compliance": "1",
    "score_fluency": "1",
}


def test_the_query_spelling_of_the_standing_matches_allows_rating():
    batch = make_batch("parity", n_items=1, constraints=())
    now = timezone.now()
    cases = list(product([False, True], [None, now], [None, now], AnnotatorStanding.Training.values))
    for i, (excluded, blocked, screened, training) in enumerate(cases):
        AnnotatorStanding.objects.create(
            batch=batch,
            annotator=make_user(f"u{i}"),
            excluded=excluded,
            blocked_at=blocked,
            screened_out_at=screened,
            training=training,
        )
    stopped = set(AnnotatorStanding.objects.filter(AnnotatorStanding.STOPPED).values_list("pk", flat=True))
    expected = {s.pk for s in AnnotatorStanding.objects.all() if not s.allows_rating}
    assert stopped == expected and 0 < len(expected) < len(cases)


@pytest.fixture
def rated(client):
    batch = make_batch("final", n_items=2, constraints=())
    user = make_user("ann")
    annotation = make_annotation(batch.items.first(), user, SCORES)
    client.force_login(user)
    return batch, user, annotation


STOPS = {
    "excluded": lambda batch, user: annotator_exclude(batch=batch, annotator=user, reason="random clicking"),
    "blocked": lambda batch, user: annotator_block(batch=batch, annotator=user, reason="failed checks"),
    "screened out": lambda batch, user: annotator_screen_out(batch=batch, annotator=user, reason="training"),
}


def test_an_annotator_in_good_standing_may_edit(client, rated):
    batch, user, annotation = rated
    edit = reverse("annotation_edit", args=[annotation.pk])
    assert not ratings_final(user=user, batch_id=batch.pk)
    assert edit in client.get(reverse("annotate_mine", args=[batch.pk])).content.decode()
    assert reverse("annotate_mine", args=[batch.pk]) in client.get(reverse("annotate_queue")).content.decode()
    assert client.post(edit, FORM).status_code == 302
    assert annotation.scores.get(dimension="coherence").value == 1


@pytest.mark.parametrize("stop", list(STOPS))
def test_a_stopped_annotator_sees_no_edit_link_and_cannot_save(client, rated, stop):
    batch, user, annotation = rated
    STOPS[stop](batch, user)
    edit = reverse("annotation_edit", args=[annotation.pk])
    assert ratings_final(user=user, batch_id=batch.pk)
    mine = client.get(reverse("annotate_mine", args=[batch.pk]))
    assert mine.status_code == 200
    html = mine.content.decode()
    assert edit not in html and "final" in html
    assert reverse("annotate_next", args=[batch.pk]) not in html
    assert (
        reverse("annotate_mine", args=[batch.pk])
        not in client.get(reverse("annotate_queue")).content.decode()
    )
    assert client.get(edit).status_code == 403
    for headers in ({}, {"HTTP_HX_REQUEST": "true"}):
        refused = client.post(edit, FORM, **headers)
        assert refused.status_code == 403
        assert (
            "no longer rate" in refused.content.decode() and "Nothing was saved" in refused.content.decode()
        )
    assert annotation.scores.get(dimension="coherence").value == 4
    assert not AnnotationRevision.objects.exists()
    with pytest.raises(SubmissionRefused, match="final"):
        annotation_update(annotation=annotation, changed_by=user, scores={**SCORES, "coherence": 1})
    assert annotation.scores.get(dimension="coherence").value == 4


def test_an_included_annotator_may_edit_again(client, rated):
    batch, user, annotation = rated
    annotator_exclude(batch=batch, annotator=user, reason="by mistake")
    annotator_include(batch=batch, annotator=user)
    assert client.post(reverse("annotation_edit", args=[annotation.pk]), FORM).status_code == 302


def test_a_finished_crowd_workers_list_has_no_edit_links(client, rated):
    batch, user, annotation = rated
    Enrolment.objects.create(
        user=user, batch=batch, worker_id="w1", end=Enrolment.End.DONE, ended_at=timezone.now()
    )
    html = client.get(reverse("annotate_mine", args=[batch.pk])).content.decode()
    assert reverse("annotation_edit", args=[annotation.pk]) not in html
    page = client.get(reverse("annotation_edit", args=[annotation.pk]))
    assert page.status_code == 403 and reverse("study_done", args=[batch.pk]) in page.content.decode()
