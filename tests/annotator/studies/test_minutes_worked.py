"""Minutes worked run from arrival to the worker's end or last step, never to now: a worker who
stopped at the consent page does not accumulate time while the study runs."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotator.models import Assignment, Enrolment
from annotator.studies.selectors import payment_rows, worker_progress
from tests.annotator.study_support import PID_A, PID_B, arrive, prolific_link, rate_next, start
from tests.factories import make_batch

pytestmark = pytest.mark.django_db


def minutes(batch, now) -> dict[str, float]:
    return {p.enrolment.worker_id: round(p.minutes_worked, 1) for p in worker_progress(batch=batch, now=now)}


def test_minutes_stop_at_the_last_step_and_do_not_grow_with_the_clock():
    batch = make_batch("clock", n_items=6)
    batch.consent_text = "Agree?"
    batch.save()
    _link, token = prolific_link(batch, quota=3)
    arrive(token, PID_A)  # opens the link and leaves at the consent page
    rater, _ = arrive(token, PID_B)
    start(rater, batch)
    rate_next(rater, batch)
    rate_next(rater, batch)
    t0 = timezone.now() - timedelta(hours=3)
    Enrolment.objects.update(started_at=t0)
    rater_e = Enrolment.objects.get(worker_id=PID_B)
    Enrolment.objects.filter(pk=rater_e.pk).update(
        consented_at=t0 + timedelta(minutes=1), instructions_seen_at=t0 + timedelta(minutes=2)
    )
    rater_e.user.annotations.update(submitted_at=t0 + timedelta(minutes=9))
    Assignment.objects.filter(annotator=rater_e.user).update(leased_at=t0 + timedelta(minutes=4))
    now = timezone.now()
    assert minutes(batch, now) == {PID_A: 0.0, PID_B: 9.0}
    assert minutes(batch, now + timedelta(hours=5)) == {PID_A: 0.0, PID_B: 9.0}
    # An item handed out after the last submission counts as a step.
    lease = rater.get(f"/annotate/{batch.pk}/next/").context["item"]
    Assignment.objects.filter(item=lease, annotator=rater_e.user).update(leased_at=t0 + timedelta(minutes=12))
    assert minutes(batch, now)[PID_B] == 12.0
    assert {r[0]: r[6] for r in payment_rows(batch=batch)} == {PID_A: 0.0, PID_B: 12.0}
