"""What the review reads from the app about each Prolific worker of a batch (admins only).

A worker's state and whether it earns the completion code come from ``worker_progress``, the
same rows the workers list and CSV show, so the review and the app never name a worker differently.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from annotator.models import Batch, Enrolment, GoldAnswer, GoldItem
from annotator.studies.selectors import WorkerProgress, worker_progress

PLATFORM = "prolific"


@dataclass(frozen=True)
class WorkerFacts:
    progress: WorkerProgress  # the worker's state and what it earns, as the app's pages have them
    failed_checks: tuple[str, ...]  # the item ids of the attention checks they failed
    answered_checks: int

    @property
    def enrolment(self) -> Enrolment:
        return self.progress.enrolment

    @property
    def items_done(self) -> int:
        return self.progress.items_done

    @property
    def minutes_worked(self) -> float:
        return self.progress.minutes_worked

    @property
    def state(self) -> str:
        return self.progress.state

    @property
    def earned_code(self) -> bool:
        return self.progress.earned_code

    @property
    def excluded(self) -> bool:
        """Excluded or blocked by quality control: never approved by the command."""
        return self.progress.excluded

    @property
    def failed_training(self) -> bool:
        """Failed comprehension: a return request, never a rejection."""
        return self.progress.failed_training

    @property
    def timed_out_unrated(self) -> bool:
        return self.progress.timed_out_unrated

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
        facts[e.worker_id] = WorkerFacts(
            progress=progress[e.pk],
            failed_checks=tuple(failed[e.user_id]),
            answered_checks=answered[e.user_id],
        )
    return facts
