"""Who rates what next: exact-k, blind assignment with leases.

An item is handed to an annotator as a lease (an ``Assignment`` in state ``leased``). The
item row carries two counters, ``n_annotations`` (submitted) and ``n_leased`` (live leases);
an item can be leased while ``n_annotations + n_leased < batch.k``. Every write that
changes an assignment's state changes the counters in the same transaction.

Concurrency: on PostgreSQL the candidate item row is taken with ``SELECT … FOR UPDATE SKIP
LOCKED`` and its counter updated before commit, so two annotators never take the last slot
of the same item (a row another transaction changed meanwhile is re-checked against the
filter before it is locked). On SQLite every ``atomic`` block starts with ``BEGIN
IMMEDIATE`` (see settings), which serialises writers. Writers lock an assignment row before
its item row; the lease never waits for a lock (SKIP LOCKED), and the expiry sweep frees
slots in ascending item order.
"""

from __future__ import annotations

import time
from collections import Counter
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import F
from django.utils import timezone

from annotator.models import Assignment, Batch, Item
from annotator.rating.services import assignment_sql as sql
from annotator.services.integrity import violated_constraint

LEASED = Assignment.State.LEASED
SWEEP_EVERY = timedelta(seconds=20)
_RELOOK_DELAYS = (0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2)


class AssignmentError(Exception):
    """A request about an assignment that cannot be honoured; the message is for the user."""


def lease_duration() -> timedelta:
    return timedelta(minutes=settings.ANNOTATOR_LEASE_MINUTES)


def lease_expiry(now: datetime, until: datetime | None = None) -> datetime:
    """When a lease given at ``now`` ends: after the lease duration, or at ``until`` (the end of the
    annotator's study session) when that comes first. A rating after the session's end is refused
    anyway, so a longer lease would only keep the item from the next worker."""
    expires = now + lease_duration()
    return min(expires, until) if until is not None else expires


def _free_slots(item_ids: list[int]) -> None:
    """Give back one leased slot per occurrence of an item id.

    Items are updated one by one in ascending id order, so two concurrent sweeps lock
    rows in the same order and cannot deadlock.
    """
    for item_id, count in sorted(Counter(item_ids).items()):
        Item.objects.filter(pk=item_id).update(n_leased=F("n_leased") - count)


@transaction.atomic
def assignment_expire_overdue(*, now: datetime | None = None) -> int:
    """Mark leases past their expiry as expired and free their slots; returns how many.

    Leases another transaction holds (being submitted right now) are skipped, not waited for.
    """
    return _expire_overdue(now=now or timezone.now())


def _expire_overdue(*, now: datetime) -> int:
    overdue = list(
        Assignment.objects.select_for_update(skip_locked=True)
        .filter(state=LEASED, lease_expires_at__lte=now)
        .values_list("pk", "item_id")
    )
    if not overdue:
        return 0
    Assignment.objects.filter(pk__in=[pk for pk, _ in overdue]).update(
        state=Assignment.State.EXPIRED, finished_at=now
    )
    _free_slots([item_id for _, item_id in overdue])
    return len(overdue)


_last_sweep = {"at": None}


def _sweep_due(now: datetime) -> bool:
    """Expired leases are swept at most every SWEEP_EVERY per process (and whenever nothing
    free is found), which saves a query on most leases; a lease runs for many minutes."""
    last = _last_sweep["at"]
    if last is not None and timedelta(0) <= now - last < SWEEP_EVERY:
        return False
    _last_sweep["at"] = now
    return True


def _lease_once(*, batch: Batch, annotator, now: datetime, expires: datetime) -> Assignment | None:
    swept = _sweep_due(now)
    tried = not swept and sql.leases_in_one_message()
    if tried:
        # The common case on PostgreSQL: the lock and the lease in one round trip, their own
        # transaction; when it leases nothing, the transaction below looks for why.
        lease = sql.lease_best_item(
            batch=batch, annotator=annotator, now=now, expires=expires, lock_first=True
        )
        if lease is not None:
            return lease
    return _lease_in_transaction(
        batch=batch, annotator=annotator, now=now, expires=expires, swept=swept, tried=tried
    )


@transaction.atomic
def _lease_in_transaction(
    *, batch: Batch, annotator, now: datetime, expires: datetime, swept: bool, tried: bool
) -> Assignment | None:
    sql.lock_annotator(annotator_id=annotator.pk)  # before anything else: see exclusion's lock order
    if swept:
        _expire_overdue(now=now)
    # The lease statement checks the standing and that no lease is live; the reason is looked
    # for only when it leased nothing (``tried``: the one-message lease just did).
    lease = None if tried else sql.lease_best_item(batch=batch, annotator=annotator, now=now, expires=expires)
    if lease is not None:
        return lease
    if not sql.standing_allows_rating(batch_id=batch.pk, annotator_id=annotator.pk, lock=False):
        return None  # excluded, blocked or screened out of this batch
    current = sql.live_lease(batch=batch, annotator_id=annotator.pk, now=now)
    if current is not None:
        return current
    if not swept and _expire_overdue(now=now):
        # Slots were held by leases that ran out since the last sweep.
        lease = sql.lease_best_item(batch=batch, annotator=annotator, now=now, expires=expires)
    if lease is None and connection.features.has_select_for_update_skip_locked:
        # Every free item may just be locked by other annotators' leases, which commit in
        # milliseconds: look again rather than tell this annotator nothing is left.
        for delay in _RELOOK_DELAYS:
            if not sql.any_candidate(batch=batch, annotator_id=annotator.pk):
                break
            time.sleep(delay)
            lease = sql.lease_best_item(batch=batch, annotator=annotator, now=now, expires=expires)
            if lease is not None:
                break
    return lease


def item_next_for_annotator(
    *, batch: Batch, annotator, now: datetime | None = None, until: datetime | None = None
) -> Assignment | None:
    """The annotator's live lease in ``batch``, or a new lease on the best free item, or None.

    None means nothing is left for this annotator: every item is complete, fully leased,
    or was already given to them (or, with one system per prompt, shares a prompt with one).
    ``until``: the end of the annotator's study session, where a new lease ends at the latest.
    """
    now = now or timezone.now()
    expires = lease_expiry(now, until)
    for _attempt in range(3):
        try:
            return _lease_once(batch=batch, annotator=annotator, now=now, expires=expires)
        except IntegrityError as exc:
            if violated_constraint(exc) != "assignment_once_per_item_annotator":
                raise
            # The same annotator leased the same item from another tab a moment ago; retry
            # and resume that lease instead.
            continue
    raise AssignmentError("Could not hand out an item right now; please reload the page.")


@transaction.atomic
def assignment_skip(*, item: Item, annotator, reason: str, now: datetime | None = None) -> Assignment:
    """Give the item back at once, recording why. The item is never offered to them again."""
    reason = reason.strip()
    if not reason:
        raise AssignmentError("Say why you skip this item.")
    if "\x00" in reason:  # no database text can hold it (PostgreSQL refuses the row)
        raise AssignmentError("The reason contains a NUL character; remove it.")
    now = now or timezone.now()
    assignment = Assignment.objects.select_for_update().filter(item=item, annotator=annotator).first()
    if assignment is None:
        raise AssignmentError("This item was not given to you.")
    if assignment.state == Assignment.State.SUBMITTED:
        raise AssignmentError("You already submitted this item; edit it from your annotations instead.")
    if assignment.state == Assignment.State.SKIPPED:
        return assignment
    was_leased = assignment.state == LEASED
    assignment.state = Assignment.State.SKIPPED
    assignment.skip_reason = reason[:2000]
    assignment.finished_at = now
    assignment.save(update_fields=["state", "skip_reason", "finished_at"])
    if was_leased:
        _free_slots([item.pk])
    return assignment


@transaction.atomic
def assignment_release(*, assignment_id: int, batch: Batch, now: datetime | None = None) -> Assignment:
    """An admin frees a live lease so the slot can go to someone else."""
    now = now or timezone.now()
    assignment = (
        Assignment.objects.select_for_update(of=("self",))
        .select_related("item", "annotator")
        .filter(pk=assignment_id, item__batch=batch)
        .first()
    )
    if assignment is None:
        raise AssignmentError("That lease does not exist.")
    if assignment.state != LEASED:
        raise AssignmentError(f"That assignment is {assignment.get_state_display().lower()}, not leased.")
    assignment.state = Assignment.State.RELEASED
    assignment.finished_at = now
    assignment.save(update_fields=["state", "finished_at"])
    _free_slots([assignment.item_id])
    return assignment
