"""A worker who arrives when every item of the study already has its k ratings: nothing is handed
out and nothing is stored, and the completion code (which pays) goes only to workers who rated."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotator.models import Annotation, Assignment, Enrolment
from tests.annotator.study_support import arrive, prolific_link, rate_next, start
from tests.factories import make_batch

pytestmark = pytest.mark.django_db
PIDS = [f"{n:02d}full".ljust(24, "0") for n in range(4)]


@pytest.fixture
def full_study():
    """Three workers fill a batch of two items at k = 3; a fourth arrives."""
    batch = make_batch("full", n_items=2)
    batch.consent_text = "You agree."
    batch.save()
    _link, token = prolific_link(batch, quota=2)
    for pid in PIDS[:3]:
        client, _ = arrive(token, pid)
        start(client, batch)
        rate_next(client, batch)
        rate_next(client, batch)
    late, first = arrive(token, PIDS[3])
    start(late, batch)
    page = late.get(reverse("annotate_next", args=[batch.pk]), follow=True)
    return batch, late, first, page


def test_a_late_worker_gets_no_item_and_changes_nothing(full_study):
    batch, _late, first, page = full_study
    assert first.status_code < 500 and page.status_code < 500
    assert Annotation.objects.count() == 6 and all(i.n_annotations == 3 for i in batch.items.all())
    assert not Assignment.objects.filter(annotator__enrolments__worker_id=PIDS[3]).exists()
    assert Annotation.objects.filter(annotator__enrolments__worker_id=PIDS[3]).count() == 0


def test_a_late_worker_gets_no_completion_code(full_study):
    batch, late, first, page = full_study
    html = page.content.decode()
    assert "C0MPLETE" not in html and 'id="completion-code"' not in html
    # a worker who arrives to a full study is told so and gets no account, so nothing can pay
    assert "full" in first.content.decode().lower()
    assert not Enrolment.objects.filter(worker_id=PIDS[3], end=Enrolment.End.DONE).exists()
    assert "C0MPLETE" not in late.get(reverse("study_done", args=[batch.pk])).content.decode()
