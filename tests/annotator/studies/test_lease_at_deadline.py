"""A worker's lease ends no later than their session's time limit: a worker who times out and leaves
does not keep the item from the next arrival for the whole lease (30 minutes), and their late rating
is still refused with the usual message."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse
from django.utils import timezone

from annotator.models import Annotation, Assignment, Enrolment
from annotator.rating.services.assignment import item_next_for_annotator, lease_duration, lease_expiry
from annotator.studies.services.enrolment import TIME_UP_NOT_SAVED
from tests.annotator.study_support import PID_A, PID_B, RATING, arrive, prolific_link, start
from tests.factories import make_annotation, make_batch, make_user

pytestmark = pytest.mark.django_db
SCORES = {"coherence": 4, "relevance": 4, "instruction_following": 4, "safety_compliance": 5, "fluency": 5}


def one_place_left(name: str):
    """One item (k = 3) that two lab annotators rated already: a single place for a worker."""
    batch = make_batch(name, n_items=1, k=3)
    for n in range(2):
        make_annotation(batch.items.get(), make_user(f"{name}-lab{n}"), SCORES)
    return batch


def test_a_timed_out_workers_item_goes_to_the_next_worker_at_the_deadline(monkeypatch):
    batch = one_place_left("deadline")
    _link, token = prolific_link(batch, quota=5, max_minutes=3)
    first, _ = arrive(token, PID_A)
    start(first, batch)
    page = first.get(reverse("annotate_next", args=[batch.pk]))
    item = page.context["item"]
    lease = Assignment.objects.get(state=Assignment.State.LEASED)
    deadline = Enrolment.objects.get(worker_id=PID_A).started_at + timedelta(minutes=3)
    assert lease.lease_expires_at == deadline < lease.leased_at + lease_duration()
    _turned_away, response = arrive(token, PID_B)
    assert 'id="study-full"' in response.content.decode()  # held while the first worker's time runs

    # Four minutes on: the first worker's time ran out and they left; the place is free again,
    # long before the normal lease would have ended.
    later = timezone.now() + timedelta(minutes=4)
    assert later < lease.leased_at + lease_duration()
    monkeypatch.setattr(timezone, "now", lambda: later)
    second, response = arrive(token, PID_B)
    assert response.status_code == 302
    start(second, batch)
    assert second.get(reverse("annotate_next", args=[batch.pk])).context["item"] == item
    assert (
        Assignment.objects.get(item=item, state=Assignment.State.LEASED).annotator.enrolments.get().worker_id
        == PID_B
    )

    # The first worker comes back and sends the rating: refused, with the usual message.
    late = first.post(reverse("annotate_submit", args=[item.pk]), RATING)
    assert late["Location"] == reverse("study_done", args=[batch.pk])
    assert [str(m) for m in get_messages(late.wsgi_request)] == [TIME_UP_NOT_SAVED]
    assert not Annotation.objects.filter(annotator__enrolments__worker_id=PID_A).exists()
    assert Enrolment.objects.get(worker_id=PID_A).end == Enrolment.End.TIMED_OUT


def test_a_lease_without_a_time_limit_or_with_time_to_spare_runs_its_full_length():
    now = timezone.now()
    assert lease_expiry(now) == now + lease_duration()
    assert lease_expiry(now, now + lease_duration() + timedelta(minutes=1)) == now + lease_duration()
    assert lease_expiry(now, now + timedelta(minutes=2)) == now + timedelta(minutes=2)
    batch = make_batch("untimed-lease", n_items=2)
    lease = item_next_for_annotator(batch=batch, annotator=make_user("lab"), now=now)
    assert lease.lease_expires_at == now + lease_duration()
    _link, token = prolific_link(batch, quota=2)
    worker, _ = arrive(token, PID_A)
    start(worker, batch)
    worker.get(reverse("annotate_next", args=[batch.pk]))
    mine = Assignment.objects.get(annotator__enrolments__worker_id=PID_A)
    assert mine.lease_expires_at == mine.leased_at + lease_duration()
