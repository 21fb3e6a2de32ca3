"""An annotator's way through a study batch: consent, instructions, rating, and the end.

``study_gate`` says where an annotator stands in a batch before an item is handed out; the
rating views follow it. A batch gates its annotators when it carries a consent text, its own
instructions or limits (``is_study_batch``), and always for accounts that came by a link.

The end states are final: ``done`` (quota reached, or nothing left for a crowd worker),
``timed_out`` (the session ran past its length), ``screened_out`` (``enrolment_screen_out``,
for quality checks), ``declined`` (consent refused) and ``full`` (a crowd worker who found no place
left before rating anything: no code).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from django.db import IntegrityError, transaction
from django.utils import timezone

from annotator.models import Assignment, Batch, Enrolment, GoldAnswer
from annotator.rating.hooks import Detour, Session
from annotator.rating.services.assignment import AssignmentError, assignment_release
from annotator.studies.selectors import (
    is_scoped,
    is_study_batch,
    limits_for,
    submitted_count,
    visit_over,
    worker_progress,
)

End = Enrolment.End
TIME_UP_NOT_SAVED = (
    "Your session's time ran out before this rating arrived, so it was not saved: ratings sent after the "
    "time limit are not accepted. Everything you sent before the limit is kept."
)
ENDED_NOT_SAVED = "Your part in this study had already ended, so this rating was not saved. Everything you sent before is kept."


class Stage(StrEnum):
    CONSENT = "consent"
    INSTRUCTIONS = "instructions"
    RATE = "rate"
    ENDED = "ended"


STAGE_URLS = {
    Stage.CONSENT: "study_consent",
    Stage.INSTRUCTIONS: "study_instructions",
    Stage.ENDED: "study_done",
}


@dataclass(frozen=True)
class Gate:
    stage: Stage
    enrolment: Enrolment | None


def enrolment_for(*, user, batch: Batch) -> Enrolment:
    """The user's enrolment in the batch, made on first need."""
    try:
        with transaction.atomic():
            return Enrolment.objects.get_or_create(user=user, batch=batch)[0]
    except IntegrityError:  # made by a parallel request a moment ago
        return Enrolment.objects.get(user=user, batch=batch)


UNREAD = object()  # study_gate's enrolment argument when the caller has not read it


def study_gate(
    *,
    user,
    batch: Batch,
    now: datetime | None = None,
    enrolment: Enrolment | None | object = UNREAD,
    submitted: int | None = None,
) -> Gate:
    """Where the annotator stands: consent, instructions, rating, or ended (which it may record:
    a session past its length ends as timed out, a reached quota as done). ``enrolment``: the
    user's enrolment in the batch (with its study link) or None, and ``submitted``: their count of
    annotations in it, when the caller read them already."""
    if not is_study_batch(batch) and not is_scoped(user):
        if enrolment is UNREAD:
            enrolment = Enrolment.objects.filter(user=user, batch=batch).first()
        if enrolment is None or not enrolment.end:
            return Gate(Stage.RATE, enrolment)
    elif enrolment is UNREAD or enrolment is None:
        enrolment = enrolment_for(user=user, batch=batch)
    if enrolment.end:
        return Gate(Stage.ENDED, enrolment)
    if batch.consent_text and enrolment.consented_at is None:
        return Gate(Stage.CONSENT, enrolment)
    if enrolment.instructions_seen_at is None:
        return Gate(Stage.INSTRUCTIONS, enrolment)
    now = now or timezone.now()
    limits = limits_for(batch=batch, enrolment=enrolment)
    deadline = limits.deadline(enrolment.started_at)
    if deadline is not None and now >= deadline:
        return Gate(Stage.ENDED, enrolment_end(enrolment=enrolment, end=End.TIMED_OUT, now=deadline))
    if submitted is None and limits.quota is not None:
        submitted = submitted_count(user=user, batch=batch)
    if limits.quota is not None and submitted >= limits.quota:
        return Gate(Stage.ENDED, enrolment_end(enrolment=enrolment, end=End.DONE, now=now))
    return Gate(Stage.RATE, enrolment)


@transaction.atomic
def enrolment_consent(*, user, batch: Batch, accept: bool, now: datetime | None = None) -> Enrolment:
    """Record the answer to the consent text; declining ends the enrolment."""
    now = now or timezone.now()
    enrolment = Enrolment.objects.select_for_update().get(pk=enrolment_for(user=user, batch=batch).pk)
    if enrolment.end:
        return enrolment
    if not accept:
        return enrolment_end(enrolment=enrolment, end=End.DECLINED, now=now)
    if enrolment.consented_at is None:
        enrolment.consented_at = now
        enrolment.save(update_fields=["consented_at"])
    return enrolment


def enrolment_instructions_seen(*, user, batch: Batch, now: datetime | None = None) -> Enrolment:
    enrolment = enrolment_for(user=user, batch=batch)
    if enrolment.instructions_seen_at is None:
        Enrolment.objects.filter(pk=enrolment.pk, instructions_seen_at__isnull=True).update(
            instructions_seen_at=now or timezone.now()
        )
        enrolment.refresh_from_db()
    return enrolment


@transaction.atomic
def enrolment_end(
    *, enrolment: Enrolment, end: str, now: datetime | None = None, reason: str = ""
) -> Enrolment:
    """End the enrolment (once: a second call keeps the first end) and give back a lease in hand."""
    now = now or timezone.now()
    updated = Enrolment.objects.filter(pk=enrolment.pk, end="").update(
        end=end, ended_at=now, end_reason=reason[:2000]
    )
    enrolment.refresh_from_db()
    if updated:
        leases = Assignment.objects.filter(
            annotator_id=enrolment.user_id, batch_id=enrolment.batch_id, state=Assignment.State.LEASED
        ).values_list("pk", flat=True)
        for lease_id in list(leases):
            try:
                assignment_release(assignment_id=lease_id, batch=enrolment.batch, now=now)
            except AssignmentError:  # submitted or expired meanwhile: nothing to give back
                pass
    return enrolment


@transaction.atomic
def enrolment_finish(*, enrolment: Enrolment, now: datetime | None = None) -> Enrolment:
    """End a crowd worker's visit when nothing is left to rate: done with the completion code, or
    full (no code) when they did no work at all, since every place was taken before they could start."""
    worked = (
        submitted_count(user=enrolment.user, batch=enrolment.batch)
        or GoldAnswer.objects.filter(
            annotator_id=enrolment.user_id, gold_item__batch_id=enrolment.batch_id, submitted_at__isnull=False
        ).exists()
    )
    return enrolment_end(enrolment=enrolment, end=End.DONE if worked else End.FULL, now=now)


def enrolment_screen_out(*, user, batch: Batch, reason: str = "", now: datetime | None = None) -> Enrolment:
    """Stop an annotator in a batch for quality reasons (failed attention or training checks).

    A crowd worker then sees the study link's screen-out code on the completion page and is sent
    back to the platform with it; their annotations stay stored (a report can leave them out).
    """
    return enrolment_end(
        enrolment=enrolment_for(user=user, batch=batch), end=End.SCREENED_OUT, now=now, reason=reason
    )


class StudyFlow:
    """The study's side of every rating request (``annotator.rating.hooks.RatingHooks``): the gate
    before an item, the end when nothing is left, the quota and time limit, a screen-out. It lives
    beside ``study_gate`` so that a rating request reaches the study through this module and the
    study's selectors only."""

    def before_rating(self, *, user, facts, sending: bool = False) -> Detour | None:
        """``facts``: the request's ``RatingFacts`` (the enrolment with its study link, and the count
        of annotations when a limit needs it). An ended visit takes no rating: a request that carries
        one is told on the end page that it was not saved."""
        gate = study_gate(user=user, batch=facts.batch, enrolment=facts.enrolment, submitted=facts.submitted)
        if gate.stage == Stage.RATE:
            return None
        warning = ""
        if sending and gate.stage == Stage.ENDED:
            warning = TIME_UP_NOT_SAVED if gate.enrolment.end == End.TIMED_OUT else ENDED_NOT_SAVED
        return Detour(STAGE_URLS[gate.stage], warning)

    def nothing_left(self, *, user, batch: Batch) -> Detour | None:
        """A crowd worker with nothing left is done: the end page with their code, or the study-full
        page when they rated nothing (None: not crowd)."""
        enrolment = Enrolment.objects.filter(user=user, batch=batch).exclude(worker_id="").first()
        if enrolment is None:
            return None
        enrolment_finish(enrolment=enrolment)
        return Detour("study_done")

    def session(self, *, facts) -> Session:
        limits = limits_for(batch=facts.batch, enrolment=facts.enrolment)
        deadline = limits.deadline(facts.enrolment.started_at) if facts.enrolment is not None else None
        return Session(quota=limits.quota, deadline=deadline)

    def visit_over(self, *, user, batch_id: int) -> bool:
        return visit_over(user=user, batch_id=batch_id)

    def workers(self, *, batch: Batch) -> list:
        return worker_progress(batch=batch)

    def annotator_stopped(self, *, user, batch: Batch, reason: str, now: datetime) -> None:
        """A crowd worker stopped at entry: the study's end page gives the screen-out code and sends
        them back to the platform."""
        if Enrolment.objects.filter(user=user, batch=batch).exclude(worker_id="").exists():
            enrolment_screen_out(user=user, batch=batch, reason=reason or "failed training", now=now)

    def labels_changed(self, *, batch: Batch, item_ids: list[int]) -> None:
        return None  # a study's flow does not depend on what the labels say
