"""Reads for crowd entry: whether a batch still has a place for a new worker, and whom a platform
session id already belongs to."""

from __future__ import annotations

from datetime import datetime

from django.db.models import F, Q
from django.utils import timezone

from annotator.models import Assignment, Batch, Enrolment, Item

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
        batch_id=batch.pk, state=Assignment.State.LEASED, lease_expires_at__lte=now or timezone.now(),
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
