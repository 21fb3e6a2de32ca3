"""What the rating page shows about the annotator's progress: one statement, whatever the batch size.

Only the annotator's own counts and the batch's complete/total items: nothing about who else
rated which item.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from time import monotonic

from django.conf import settings
from django.db import connection
from django.db.models import Count

from annotator.db_private import CompiledQuery
from annotator.hot_sql import hand_written_sql, hot_cursor
from annotator.models import Assignment, Batch, GoldAnswer, GoldItem, Item
from annotator.rating.selectors.queue import item_number
from annotator.rating.services.assignment import lease_duration


@dataclass(frozen=True)
class RatingProgress:
    mine_submitted: int  # the annotator's ratings in the batch (annotations; not gold answers): "You rated"
    mine_skipped: int
    left_for_me: int  # items with a free slot never given to the annotator (not counting this one)
    items_total: int
    items_complete: int
    leased_at: datetime | None  # when this item was given to the annotator
    lease_expires_at: datetime | None  # held for them until then
    training_done: int = 0  # training items answered (they come first, labelled as training)
    quota_left: int | None = (
        None  # annotations the study's quota still allows after this item (None: no quota)
    )
    training: bool = False  # this item is a training item (numbered apart, as "Training item n")

    @property
    def position(self) -> int:
        """This item's number: the one "Your annotations" lists its rating under (``item_number``), or
        a training item's number among the training items."""
        return self.training_done + 1 if self.training else item_number(self.mine_submitted)

    @property
    def more(self) -> int:
        """The most further items the annotator may get after this one: items with a free slot never
        given to them, within the study's quota (gold checks may come on top)."""
        return self.left_for_me if self.quota_left is None else min(self.left_for_me, self.quota_left)

    @property
    def percent_complete(self) -> int:
        return round(100 * self.items_complete / self.items_total) if self.items_total else 0


ITEMS, MINE, GOLD, STATES = 0, 1, 2, 3

# Two parts cost what grows with the work done: the batch's items grouped by their progress counters
# (ITEMS: an index entry per item) and the annotator's items grouped by those counters (MINE: a lookup
# of each item they were ever given, which is what tells the items still open to others from the rest).
# They only bound "up to N more for you", so each process reads them at most once per
# ANNOTATOR_PROGRESS_CACHE_SECONDS (per batch, and per batch and annotator) and shows them that old at
# most; near the end both are read again. The annotator's own counts by state (their position in the
# sequence, a quota) and their gold answers are always read fresh.
_batch_parts: dict[tuple[str, int], tuple[float, list[tuple]]] = {}
_BATCH_PARTS_KEPT = 256  # batches remembered per process
_mine_parts: dict[tuple[str, int, int], tuple[float, list[tuple]]] = {}
_MINE_PARTS_KEPT = 4096  # (batch, annotator) pairs remembered per process


# The four parts as ORM reads (SQLite), each compiled once per process.
_STATES = CompiledQuery(
    lambda annotator_id, batch_id: (
        Assignment.objects.filter(annotator_id=annotator_id, batch_id=batch_id)
        .order_by()
        .values_list("state")
        .annotate(n=Count("pk"))
    )
)
_MINE = CompiledQuery(
    lambda annotator_id, batch_id: (
        Assignment.objects.filter(annotator_id=annotator_id, batch_id=batch_id)
        .order_by()
        .values_list("item__n_annotations", "item__n_leased", "state")
        .annotate(n=Count("pk"))
    )
)
_GOLD = CompiledQuery(
    lambda annotator_id, batch_id: (
        GoldAnswer.objects.filter(
            annotator_id=annotator_id, gold_item__batch_id=batch_id, submitted_at__isnull=False
        )
        .order_by()
        .values_list("gold_item__kind")
        .annotate(n=Count("pk"))
    )
)
_ITEMS = CompiledQuery(
    lambda batch_id: (
        Item.objects.filter(batch_id=batch_id)
        .order_by()
        .values_list("n_annotations", "n_leased")
        .annotate(n=Count("pk"))
    )
)


def _orm_rows(
    *, batch_id: int, annotator_id: int, count_gold: bool, with_items: bool, with_mine: bool
) -> list[tuple]:
    """The rows of :func:`_sql`, read with the ORM's statements (SQLite)."""
    rows = []
    with connection.cursor() as cursor:
        if with_mine:
            cursor.execute(*_MINE.sql(annotator_id, batch_id))
            rows += [(MINE, *row) for row in cursor.fetchall()]
        else:
            cursor.execute(*_STATES.sql(annotator_id, batch_id))
            rows += [(STATES, 0, 0, state, n) for state, n in cursor.fetchall()]
        if count_gold:
            cursor.execute(*_GOLD.sql(annotator_id, batch_id))
            rows += [(GOLD, 0, 0, kind, n) for kind, n in cursor.fetchall()]
        if with_items:
            cursor.execute(*_ITEMS.sql(batch_id))
            rows += [(ITEMS, a, n_leased, "", n) for a, n_leased, n in cursor.fetchall()]
    return rows


@lru_cache(maxsize=16)
def _sql(with_items: bool, count_gold: bool, with_mine: bool = True) -> str:
    """The parts in one statement (PostgreSQL); parameters: :func:`_params`."""
    qn = connection.ops.quote_name
    item_t, assignment_t = qn(Item._meta.db_table), qn(Assignment._meta.db_table)
    if with_mine:
        # A lateral lookup per assignment, fenced by OFFSET 0: as a plain join it was planned as a scan
        # of every item in the table once the annotator had a few hundred assignments.
        items = f"CROSS JOIN LATERAL (SELECT n_annotations, n_leased FROM {item_t} WHERE id = a.item_id OFFSET 0) i"
        parts = [
            f"SELECT {MINE}, i.n_annotations, i.n_leased, a.state, COUNT(*) FROM {assignment_t} a {items}"
            " WHERE a.annotator_id = %s AND a.batch_id = %s GROUP BY i.n_annotations, i.n_leased, a.state"
        ]
    else:  # the MINE part is remembered: the counts by state alone, read now
        parts = [
            f"SELECT {STATES}, 0, 0, a.state, COUNT(*) FROM {assignment_t} a"
            " WHERE a.annotator_id = %s AND a.batch_id = %s GROUP BY a.state"
        ]
    if count_gold:
        answer_t, gold_t = qn(GoldAnswer._meta.db_table), qn(GoldItem._meta.db_table)
        parts.append(
            f"SELECT {GOLD}, 0, 0, gi.kind, COUNT(*) FROM {answer_t} g INNER JOIN {gold_t} gi"
            " ON gi.id = g.gold_item_id WHERE g.annotator_id = %s AND gi.batch_id = %s AND g.submitted_at IS NOT NULL"
            " GROUP BY gi.kind"
        )
    if with_items:
        parts.append(
            f"SELECT {ITEMS}, n_annotations, n_leased, '', COUNT(*) FROM {item_t} WHERE batch_id = %s"
            " GROUP BY n_annotations, n_leased"
        )
    return " UNION ALL ".join(parts)


def _params(*, batch_id: int, annotator_id: int, count_gold: bool, with_items: bool) -> list:
    own = [annotator_id, batch_id]
    return own + (own if count_gold else []) + ([batch_id] if with_items else [])


def _remember(parts: dict, key, rows: list[tuple], kept: int, now: float) -> None:
    seconds = settings.ANNOTATOR_PROGRESS_CACHE_SECONDS
    if seconds > 0:
        if len(parts) >= kept:
            parts.clear()
        parts[key] = (now + seconds, rows)


def _counts(
    *, batch_id: int, annotator_id: int, count_gold: bool, fresh: bool = False
) -> tuple[list[tuple], bool]:
    """(part, n_annotations, n_leased, state, n) rows: the annotator's assignments in the batch by
    their items' counters and state (MINE), with ``count_gold`` their submitted gold answers (GOLD), and
    the batch's items by those counters (ITEMS); MINE and ITEMS are remembered for
    ``ANNOTATOR_PROGRESS_CACHE_SECONDS`` unless ``fresh``, and a remembered MINE comes with the
    annotator's counts by state read now (STATES). Also whether anything was a remembered part. On
    PostgreSQL one statement written by hand: it runs on every rating page."""
    now = monotonic()
    items_key, mine_key = (connection.alias, batch_id), (connection.alias, batch_id, annotator_id)
    kept_items, kept_mine = _batch_parts.get(items_key), _mine_parts.get(mine_key)
    with_items = fresh or kept_items is None or kept_items[0] <= now
    with_mine = fresh or kept_mine is None or kept_mine[0] <= now
    read = {
        "batch_id": batch_id,
        "annotator_id": annotator_id,
        "count_gold": count_gold,
        "with_items": with_items,
    }
    if hand_written_sql():
        with hot_cursor() as cursor:
            cursor.execute(_sql(with_items, count_gold, with_mine), _params(**read))
            rows = cursor.fetchall()
    else:
        rows = _orm_rows(**read, with_mine=with_mine)
    if with_items:
        _remember(_batch_parts, items_key, [r for r in rows if r[0] == ITEMS], _BATCH_PARTS_KEPT, now)
    else:
        rows += kept_items[1]
    if with_mine:
        _remember(_mine_parts, mine_key, [r for r in rows if r[0] == MINE], _MINE_PARTS_KEPT, now)
    else:  # what the remembered part says but its counts by state, which STATES has read now
        rows += [(MINE, a, n_leased, "", n) for _, a, n_leased, _, n in kept_mine[1]]
    return rows, not (with_items and with_mine)


@dataclass
class _Tally:
    total: int = 0
    complete: int = 0
    open_items: int = 0  # items with a free slot
    submitted: int = 0
    skipped: int = 0
    mine_open: int = 0  # of those, items ever given to the annotator
    training: int = 0


def _tally(rows: list[tuple], k: int) -> _Tally:
    t = _Tally()
    for part, n_annotations, n_leased, state, n in rows:
        free = n_annotations + n_leased < k
        if part == ITEMS:
            t.total += n
            t.complete += n if n_annotations >= k else 0
            t.open_items += n if free else 0
        elif part in (MINE, STATES):
            t.submitted += n if state == Assignment.State.SUBMITTED else 0  # rated here or imported
            t.skipped += n if state == Assignment.State.SKIPPED else 0
            t.mine_open += n if free and part == MINE else 0
        elif state == GoldItem.Kind.TRAINING:
            t.training += n
        # Answered checks are not ratings: not in "You rated", nor in what a study counts or pays for.
    return t


def rating_progress(
    *,
    batch: Batch,
    item,
    annotator,
    lease: Assignment | None = None,
    gold_shown_at: datetime | None = None,
    count_gold: bool = False,
    quota: int | None = None,
) -> RatingProgress:
    """The annotator's place in ``batch`` while rating ``item`` (``lease``: their assignment of
    it, when the caller has it at hand; ``count_gold``: the batch has gold items, whose training
    answers number the training items).

    Counts grouped by the items' progress counters (a handful of rows: k + 1 values each), so the
    statement stays cheap to build and to run whatever the batch size; what is left for the annotator
    is the items with a free slot less those ever given to them (their current item included), within
    ``quota`` (the most annotations the annotator may submit in the batch, when a study sets one)."""
    counts = {"batch_id": batch.pk, "annotator_id": annotator.pk, "count_gold": count_gold}
    rows, remembered = _counts(**counts)
    t = _tally(rows, batch.k)
    if remembered and t.open_items - t.mine_open <= batch.k:
        # Near the end of what is left for the annotator the remembered counts could be off by the items
        # they or others took, rated or skipped since: read them all now.
        t = _tally(_counts(**counts, fresh=True)[0], batch.k)
    if not isinstance(item, Item):  # a gold item: held like any item from when it was shown
        held = (gold_shown_at, gold_shown_at + lease_duration()) if gold_shown_at else (None, None)
    elif lease is not None and lease.item_id == item.pk and lease.state == Assignment.State.LEASED:
        held = (lease.leased_at, lease.lease_expires_at)
    else:
        held = (
            Assignment.objects.filter(item=item, annotator=annotator, state=Assignment.State.LEASED)
            .values_list("leased_at", "lease_expires_at")
            .first()
        ) or (None, None)
    quota_left = None
    if quota is not None:
        quota_left = max(0, quota - t.submitted - (1 if isinstance(item, Item) else 0))
    return RatingProgress(
        mine_submitted=t.submitted,
        mine_skipped=t.skipped,
        left_for_me=max(0, t.open_items - t.mine_open),
        items_total=t.total,
        items_complete=t.complete,
        leased_at=held[0],
        lease_expires_at=held[1],
        training_done=t.training,
        quota_left=quota_left,
        training=not isinstance(item, Item) and item.kind == GoldItem.Kind.TRAINING,
    )
