"""Reads for studies: account scopes, an annotator's limits in a batch, workers' progress, whether a
batch still has a place for a new worker, and whom a platform session id already belongs to.

Platform ids (worker, study, session) leave this module only through ``payment_rows``, the
admins' payment export; everything else names people by their username, a pseudonym for
crowd workers.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Count, F, Max, Q, QuerySet
from django.utils import timezone

from annotator.models import (
    AccountScope,
    AnnotatorStanding,
    Assignment,
    Batch,
    Enrolment,
    GoldAnswer,
    GoldItem,
    InviteLink,
    Item,
    QualityRule,
    StudyLink,
)
from annotator.rating.selectors.queue import counted_annotations
from annotator.studies.crowd import PLATFORMS

End = Enrolment.End
# The worker's state, as every page, export and the Prolific review name it: "working", or an
# end's label in lower case ("done", "timed out", "returned", ...), or a quality-control stop.
WORKING = "working"
TIMED_OUT = End.TIMED_OUT.label.lower()


def is_scoped(user) -> bool:
    """Whether the account may rate only the batches its scope lists (a link-made account); cached
    on the user object for the request (the session engine sets it: ``annotator.roles.remember_scoped``)."""
    if not hasattr(user, "_scoped"):
        user._scoped = AccountScope.objects.filter(user_id=user.pk).exists()
    return user._scoped


@dataclass(frozen=True)
class Limits:
    quota: int | None  # most submitted annotations in the batch
    minutes: int | None  # longest session from arrival

    def deadline(self, started_at: datetime) -> datetime | None:
        return started_at + timedelta(minutes=self.minutes) if self.minutes else None


def _smallest(*values: int | None) -> int | None:
    given = [v for v in values if v]
    return min(given) if given else None


def visit_over(*, user, batch_id: int) -> bool:
    """Whether the user's study visit to the batch has ended (done, timed out, screened out, declined):
    their ratings are then final."""
    return Enrolment.objects.filter(Enrolment.VISIT_OVER, user=user, batch_id=batch_id).exists()


def limits_for(*, batch: Batch, enrolment: Enrolment | None) -> Limits:
    """The batch's limits, tightened by the study link the worker came by."""
    link = enrolment.study_link if enrolment is not None and enrolment.study_link_id else None
    return Limits(
        quota=_smallest(batch.max_items_per_annotator, link.quota if link else None),
        minutes=_smallest(batch.max_session_minutes, link.max_minutes if link else None),
    )


def batch_gives_checks(batch: Batch) -> bool:
    """Whether annotators of the batch may be given gold checks between their items (a quality rule
    that mixes them in, and check items to draw from)."""
    return (
        QualityRule.objects.filter(batch=batch, check_every__gte=2).exists()
        and GoldItem.objects.filter(batch=batch, kind=GoldItem.Kind.CHECK).exists()
    )


def is_study_batch(batch: Batch) -> bool:
    """Batches with a consent text, their own instructions or limits gate every annotator."""
    return bool(
        batch.consent_text or batch.instructions or batch.max_items_per_annotator or batch.max_session_minutes
    )


def answered_checks(*, batch: Batch) -> QuerySet[GoldAnswer]:
    """The gold checks answered in the batch: shown like items, counted apart from them."""
    return GoldAnswer.objects.filter(
        gold_item__batch=batch, gold_item__kind=GoldItem.Kind.CHECK, submitted_at__isnull=False
    )


def submitted_count(*, user, batch: Batch) -> int:
    """The user's rated items in the batch (``counted_annotations``)."""
    return counted_annotations(batch=batch).filter(annotator=user).count()


def checks_answered_count(*, user, batch: Batch) -> int:
    return answered_checks(batch=batch).filter(annotator=user).count()


@dataclass(frozen=True)
class WorkerProgress:
    enrolment: Enrolment
    items_done: int
    quota: int | None
    minutes_worked: float
    last_active_at: datetime | None
    state: str  # working, done, timed out, screened out, declined consent, study full, returned, blocked, excluded
    checks_done: int = 0  # gold checks answered, on top of items_done (the end page names them apart)
    standing: AnnotatorStanding | None = None  # quality control's record of them in the batch, if any

    @property
    def username(self) -> str:
        return self.enrolment.user.get_username()

    @property
    def end(self) -> str:
        """How the visit ended as the app sees it now: the recorded end, or ``End.TIMED_OUT`` once the
        session's time is up, although the worker has not come back for the end page to record it."""
        if self.enrolment.end:
            return self.enrolment.end
        return End.TIMED_OUT if self.state == TIMED_OUT else ""

    @property
    def earned_code(self) -> bool:
        """Whether the visit earns the completion code (the end page's rule, on the end above)."""
        return earns_completion_code(end=self.end, annotations=self.items_done)

    @property
    def timed_out_unrated(self) -> bool:
        """Their time ran out before they rated any item: a study link gives them no completion code."""
        return self.end == End.TIMED_OUT and not self.earned_code

    @property
    def excluded(self) -> bool:
        """Excluded or blocked by quality control (whatever their visit's end): never paid unseen."""
        return bool(self.standing and (self.standing.excluded or self.standing.blocked_at))

    @property
    def failed_training(self) -> bool:
        return bool(self.standing and self.standing.training == AnnotatorStanding.Training.FAILED)

    @property
    def code_given(self) -> bool:
        """Whether the study link's completion code is theirs: their end page shows it."""
        return bool(self.enrolment.study_link_id) and self.earned_code


def _state(
    enrolment: Enrolment, limits: Limits, now: datetime, standing: AnnotatorStanding | None = None
) -> str:
    """The one rule for a worker's state: the recorded end first, then a quality-control stop, then
    the session's clock (time up counts as timed out before the worker comes back to see it)."""
    if enrolment.end:
        return enrolment.get_end_display().lower()
    if standing is not None:  # an account (not a crowd worker) stopped by quality control
        if standing.screened_out_at:
            return End.SCREENED_OUT.label.lower()
        if standing.blocked_at:
            return "blocked"
        if standing.excluded:
            return "excluded"
    deadline = limits.deadline(enrolment.started_at)
    if deadline is not None and now >= deadline:
        return TIMED_OUT
    return WORKING


def worker_progress(*, batch: Batch, now: datetime | None = None) -> list[WorkerProgress]:
    """Every enrolment in the batch with items done, checks answered, minutes from arrival to their end
    or last step (consent, instructions, an item given or submitted), and state (six queries)."""
    now = now or timezone.now()
    enrolments = list(
        Enrolment.objects.filter(batch=batch)
        .select_related("user", "study_link")
        .order_by("started_at", "pk")
    )
    done = {
        row["annotator_id"]: row
        for row in counted_annotations(batch=batch)
        .filter(annotator_id__in=[e.user_id for e in enrolments])
        .values("annotator_id")
        .annotate(n=Count("pk"), last=Max("submitted_at"))
    }
    standings = {
        s.annotator_id: s
        for s in AnnotatorStanding.objects.filter(
            batch=batch, annotator_id__in=[e.user_id for e in enrolments]
        )
    }
    given = dict(
        Assignment.objects.filter(batch=batch, annotator_id__in=[e.user_id for e in enrolments])
        .values("annotator_id")
        .annotate(last=Max("leased_at"))
        .values_list("annotator_id", "last")
    )
    checks = dict(
        answered_checks(batch=batch)
        .filter(annotator_id__in=[e.user_id for e in enrolments])
        .values("annotator_id")
        .annotate(n=Count("pk"))
        .values_list("annotator_id", "n")
    )
    rows = []
    for e in enrolments:
        limits = limits_for(batch=batch, enrolment=e)
        mine = done.get(e.user_id, {"n": 0, "last": None})
        # Time runs to the last thing the worker did, never to now: someone who left at the consent
        # page worked no minutes, however long ago they opened the link.
        steps = (e.started_at, e.consented_at, e.instructions_seen_at, mine["last"], given.get(e.user_id))
        end = e.ended_at or max(t for t in steps if t is not None)
        deadline = limits.deadline(e.started_at)
        if deadline is not None:
            end = min(end, deadline)
        rows.append(
            WorkerProgress(
                enrolment=e,
                items_done=mine["n"],
                quota=limits.quota,
                minutes_worked=max(0.0, (end - e.started_at).total_seconds() / 60),
                last_active_at=mine["last"],
                state=_state(e, limits, now, standings.get(e.user_id)),
                checks_done=checks.get(e.user_id, 0),
                standing=standings.get(e.user_id),
            )
        )
    return rows


PAYMENT_HEADER = (
    "worker_id",
    "platform",
    "study_id",
    "session_id",
    "pseudonym",
    "items_done",
    "minutes_worked",
    "started_at",
    "completed_at",
    "state",
    "screened_out",
    "completion_code_given",
    "checks_done",  # gold checks answered, not in items_done (nor in the worker's own "You rated")
)


def payment_rows(*, batch: Batch) -> list[tuple]:
    """One row per crowd worker in the batch, for paying them (admins only)."""
    rows = []
    for p in worker_progress(batch=batch):
        e = p.enrolment
        if not e.is_crowd:
            continue
        completed = e.ended_at.isoformat() if e.end == End.DONE and e.ended_at else ""
        rows.append(
            (
                e.worker_id,
                e.platform,
                e.platform_study_id,
                e.platform_session_id,
                p.username,
                p.items_done,
                round(p.minutes_worked, 1),
                e.started_at.isoformat(),
                completed,
                p.state,
                e.end == End.SCREENED_OUT,
                p.code_given,
                p.checks_done,
            )
        )
    return rows


def links_overview(*, now: datetime | None = None) -> dict:
    """The study and invite links, newest first, with how many people came by each. A live study link
    whose batch has no item left to hand out is marked ``full``: it still opens, but every worker who
    comes now meets the "study full" page, which "live" alone did not tell."""
    now = now or timezone.now()
    study = list(
        StudyLink.objects.select_related("batch")
        .annotate(workers=Count("enrolments"))
        .order_by("-created_at")
    )
    live_batches = {link.batch for link in study if link.status(now) == "live"}
    full = {batch.pk for batch in live_batches if not batch_has_free_slot(batch=batch, now=now)}
    for link in study:
        link.full = link.batch_id in full and link.status(now) == "live"
    invites = InviteLink.objects.prefetch_related("batches").order_by("-created_at")
    return {"study_links": study, "invite_links": list(invites), "now": now}


@dataclass(frozen=True)
class Ending:
    """What the end page shows a worker: the code to give the platform and where to go next."""

    code: str
    url: str  # empty: the worker copies the code into the platform themselves
    platform_label: str
    platform_name: str = ""  # for sentences ("your Prolific code"); empty for a platform without a name
    leave_url: str = ""  # where a worker leaves without a code (a full study)
    leave_how: str = ""


COMPLETION_ENDS = (End.DONE, End.TIMED_OUT)  # the ends that can give the completion code


def earns_completion_code(*, end: str, annotations: int) -> bool:
    """Whether a visit that ended so earns the study's completion code: done, or timed out after at
    least one submitted rating. Training answers and gold checks are not rated items, so a worker whose
    time ran out before their first rating did nothing a researcher pays for. The end page, the
    workers list and CSV and the Prolific review all decide by this rule."""
    return end == End.DONE or (end == End.TIMED_OUT and annotations > 0)


def ending_for(enrolment: Enrolment, *, annotations: int) -> Ending:
    """The enrolment's ending; ``annotations``: the worker's submitted annotations in the batch."""
    link = enrolment.study_link
    if link is None:
        return Ending("", "", "")
    return link_ending(link, enrolment.end, annotations=annotations)


def link_ending(link: StudyLink, end: str, *, annotations: int = 0) -> Ending:
    """The code and the way back a study link gives for an end (``End.FULL``, or a time-out before
    any rating: no code, the way to leave the study on the platform). ``annotations``: the worker's
    submitted annotations, which decide whether a time-out earns the completion code."""
    platform = PLATFORMS.get(link.platform)
    label = platform.label if platform else link.platform
    where = {
        "platform_label": label,
        "platform_name": platform.name if platform else "",
        "leave_url": platform.leave_url if platform else "",
        "leave_how": platform.leave_how if platform else "",
    }
    code = {
        End.DONE: link.completion_code,
        End.TIMED_OUT: link.completion_code,
        End.SCREENED_OUT: link.screen_out_code,
        End.DECLINED: link.no_consent_code,
    }.get(end, "")
    if end in COMPLETION_ENDS:
        if not earns_completion_code(end=end, annotations=annotations):
            code = ""
        elif link.completion_url:
            return Ending(code, link.completion_url, **where)
    return Ending(code, platform.return_url_for(code) if platform else "", **where)


FULL_WARNING = (
    "The batch {batch} is full: every item has all its annotations or is being rated. Workers who open "
    "this link now see a \u201cstudy full\u201d page and get no code; add items or raise k before you launch."
)


def batch_has_free_slot(*, batch: Batch, now: datetime | None = None) -> bool:
    """Whether a worker arriving now could be given an item: one still short of its k annotations
    with no lease on that slot, or with a lease that ran out (it is given back on the next lease)."""
    if Item.objects.filter(batch_id=batch.pk, n_annotations__lt=batch.k - F("n_leased")).exists():
        return True
    return Assignment.objects.filter(
        batch_id=batch.pk,
        state=Assignment.State.LEASED,
        lease_expires_at__lte=now or timezone.now(),
    ).exists()


def session_owner_elsewhere(*, batch_id: int, platform: str, session_id: str, worker_id: str) -> bool:
    """Whether another worker id in the batch arrived with, or now works in, this platform session."""
    if not session_id:
        return False
    return (
        Enrolment.objects.filter(batch_id=batch_id, platform=platform)
        .filter(Q(entry_session_id=session_id) | Q(platform_session_id=session_id))
        .exclude(worker_id=worker_id)
        .exists()
    )
