"""What the review reads from the app about each Prolific worker of a batch (admins only)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from annotator.models import AnnotatorStanding, Batch, Enrolment, GoldAnswer, GoldItem
from annotator.studies.selectors import earns_completion_code, worker_progress

End = Enrolment.End
PLATFORM = "prolific"


@dataclass(frozen=True)
class WorkerFacts:
    enrolment: Enrolment
    items_done: int
    minutes_worked: float
    failed_checks: tuple[str, ...]  # the item ids of the attention checks they failed
    answered_checks: int
    excluded: bool  # excluded or blocked by quality control: never approved by the command
    failed_training: bool  # comprehension: a return request, never a rejection

    @property
    def earned_code(self) -> bool:
        """Whether the end page showed them the completion code (the rule the end page follows)."""
        return earns_completion_code(end=self.enrolment.end, annotations=self.items_done)

    @property
    def timed_out_unrated(self) -> bool:
        """Their time ran out before their first rating: no code, and a return request is in order."""
        return self.enrolment.end == End.TIMED_OUT and not self.earned_code

    @property
    def sessions(self) -> set[str]:
        return {s for s in (self.enrolment.entry_session_id, self.enrolment.platform_session_id) if s}


def prolific_workers(*, batch: Batch) -> dict[str, WorkerFacts]:
    """The batch's Prolific workers by participant id, with what the review decides on."""
    progress = {p.enrolment.pk: p for p in worker_progress(batch=batch)}
    enrolments = [
        p.enrolment for p in progress.values() if p.enrolment.platform == PLATFORM and p.enrolment.worker_id
    ]
    users = [e.user_id for e in enrolments]
    standings = {
        s.annotator_id: s for s in AnnotatorStanding.objects.filter(batch=batch, annotator_id__in=users)
    }
    failed, answered = defaultdict(list), defaultdict(int)
    checks = (
        GoldAnswer.objects.filter(
            gold_item__batch=batch,
            gold_item__kind=GoldItem.Kind.CHECK,
            annotator_id__in=users,
            submitted_at__isnull=False,
        )
        .order_by("submitted_at", "pk")
        .values_list("annotator_id", "gold_item__item_id", "passed")
    )
    for user_id, item_id, passed in checks:
        answered[user_id] += 1
        if passed is False:
            failed[user_id].append(item_id)
    facts = {}
    for e in enrolments:
        standing = standings.get(e.user_id)
        facts[e.worker_id] = WorkerFacts(
            enrolment=e,
            items_done=progress[e.pk].items_done,
            minutes_worked=progress[e.pk].minutes_worked,
            failed_checks=tuple(failed[e.user_id]),
            answered_checks=answered[e.user_id],
            excluded=bool(standing and (standing.excluded or standing.blocked_at)),
            failed_training=bool(standing and standing.training == AnnotatorStanding.Training.FAILED),
        )
    return facts
