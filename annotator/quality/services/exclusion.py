"""Excluding an annotator from a batch's statistics, and the rules that do it for the researcher.

An excluded annotator's annotations stay stored but stop counting: ``Item.n_annotations``
counts valid annotations only, so each of their items gets a free slot again and the
assignment service hands it to someone else until the item has k valid annotations.

Concurrency: the annotator's user row is locked for update first; every lease and submission
key-share locks it before anything else (``assignment_sql.lock_annotator``), and a lease then
reads the standing (``standing_allows_rating``), so a lease either commits before the exclusion looks at the
annotator's assignments (and is released by it) or waits and is refused. Then the annotator's assignment rows in the batch are locked (id order): a
submission holding its lease row commits first and its annotation is then uncounted; one that
comes later finds its lease released, takes the general path and is refused there (it reads
the standing too). Item counters move in ascending item id, the order submissions use
(assignment, then item).
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from annotator.models import (
    Annotation,
    AnnotatorStanding,
    Assignment,
    Batch,
    Item,
)
from annotator.rating.hooks import annotator_stopped

RESEARCHER, BLOCK_RULE = "researcher", "block rule"


class ExclusionError(Exception):
    """The request cannot be honoured; the message is for the user."""


def _lock_standing(batch: Batch, annotator) -> AnnotatorStanding:
    # The user's row first: leases and submissions key-share lock it (assignment_sql.lock_annotator).
    list(get_user_model().objects.select_for_update().filter(pk=annotator.pk).values_list("pk"))
    AnnotatorStanding.objects.get_or_create(batch=batch, annotator=annotator)
    return AnnotatorStanding.objects.select_for_update().get(batch=batch, annotator=annotator)


def _stop_rating(batch: Batch, annotator, now: datetime, *, count_step: int = 0) -> None:
    """Lock the annotator's assignments in the batch, release their live leases, and move each
    item's counters once, in ascending item id: ``n_leased`` for the released leases and
    ``n_annotations`` by ``count_step`` per annotation of theirs (−1 to exclude, +1 to include)."""
    rows = list(
        Assignment.objects.select_for_update()
        .filter(item__batch=batch, annotator=annotator)
        .order_by("pk")
        .values_list("pk", "item_id", "state")
    )
    leased = [(pk, item_id) for pk, item_id, state in rows if state == Assignment.State.LEASED]
    if leased:
        Assignment.objects.filter(pk__in=[pk for pk, _ in leased]).update(
            state=Assignment.State.RELEASED, finished_at=now
        )
    freed = Counter(item_id for _, item_id in leased)
    counted = Counter()
    if count_step:
        counted = Counter(
            Annotation.objects.filter(item__batch=batch, annotator=annotator).values_list(
                "item_id", flat=True
            )
        )
    for item_id in sorted(set(freed) | set(counted)):
        Item.objects.filter(pk=item_id).update(
            n_leased=F("n_leased") - freed[item_id],
            n_annotations=F("n_annotations") + count_step * counted[item_id],
        )


@transaction.atomic
def annotator_exclude(
    *, batch: Batch, annotator, reason: str, rule: str = RESEARCHER, by=None, now: datetime | None = None
) -> AnnotatorStanding:
    """Take the annotator's annotations out of the batch's statistics and reopen their slots."""
    reason = (reason or "").strip()
    if not reason:
        raise ExclusionError("Say why you exclude this annotator.")
    now = now or timezone.now()
    standing = _lock_standing(batch, annotator)
    _stop_rating(batch, annotator, now, count_step=0 if standing.excluded else -1)
    standing.excluded, standing.exclusion_rule, standing.exclusion_reason = True, rule, reason[:2000]
    standing.excluded_by, standing.excluded_at = by, now
    standing.save()
    return standing


@transaction.atomic
def annotator_include(*, batch: Batch, annotator) -> AnnotatorStanding:
    """Undo an exclusion: the annotations count again (an item may then hold more than k)."""
    standing = _lock_standing(batch, annotator)
    if standing.excluded:
        _stop_rating(batch, annotator, timezone.now(), count_step=+1)  # no live lease exists to release
    standing.excluded, standing.exclusion_rule, standing.exclusion_reason = False, "", ""
    standing.excluded_by = standing.excluded_at = standing.blocked_at = None
    standing.save()
    return standing


@transaction.atomic
def annotator_block(
    *, batch: Batch, annotator, reason: str, now: datetime | None = None
) -> AnnotatorStanding:
    """The block rule: no more items, leases released, and the annotator excluded."""
    now = now or timezone.now()
    standing = annotator_exclude(batch=batch, annotator=annotator, reason=reason, rule=BLOCK_RULE, now=now)
    standing.blocked_at = standing.blocked_at or now
    standing.save(update_fields=["blocked_at"])
    return standing


@transaction.atomic
def annotator_screen_out(
    *, batch: Batch, annotator, reason: str = "", now: datetime | None = None
) -> AnnotatorStanding:
    """Mark the annotator as failed at entry (training): they get no items in this batch.

    The rating hooks hear of it (``annotator.rating.hooks``): a study that recruited this annotator
    sends them back to the platform with its screen-out code.
    """
    now = now or timezone.now()
    standing = _lock_standing(batch, annotator)
    _stop_rating(batch, annotator, now)
    standing.training = AnnotatorStanding.Training.FAILED
    standing.screened_out_at = standing.screened_out_at or now
    standing.save()
    annotator_stopped(user=annotator, batch=batch, reason=reason, now=now)
    return standing
