"""The lease statement, in SQL written by hand: the one place assignment needs what the ORM cannot say.

``lease_best_item`` takes the best free item with ``FOR UPDATE SKIP LOCKED`` inside an
``UPDATE … RETURNING`` (on PostgreSQL with the lease row inserted by the same statement): it is
what keeps exactly k annotations per item. Which items are candidates is written here too
(:func:`_candidates_sql`), and the "anything left?" check reads the same SQL; the text is built
once per batch shape. The live-lease lookup is an ORM query.
"""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache

from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import BooleanField, Exists, F, OuterRef, Q, QuerySet, Value
from django.db.models.lookups import Exact

from annotator.db_rows import instance_from_row
from annotator.hot_sql import hot_cursor
from annotator.models import AnnotatorStanding, Assignment, Item
from annotator.models.quality import standing_stopped_sql

WINDOW = 64  # free items the random tie-break draws from
NEXT_ORDER = (
    "-queue_first",
    "-n_annotations",
    "-n_leased",
    "queue_rank",
)  # a draw's items first, then closest to completion, then the batch's order (index item_next_order)

_ITEM_FIELDS = list(Item._meta.concrete_fields)
_ITEM_COLUMNS = ", ".join(f.column for f in _ITEM_FIELDS)


def _tables() -> tuple[str, str]:
    qn = connection.ops.quote_name
    return qn(Item._meta.db_table), qn(Assignment._meta.db_table)


def _candidates_sql(one_system_per_prompt: bool) -> str:
    """The items of a batch with a free slot that this annotator may get: never given to them and,
    with one system per prompt, sharing no prompt with one that was. Parameters: batch id, k, k,
    annotator id (and batch id, annotator id)."""
    # ``NOT EXISTS … OFFSET 0`` keeps "never given" an index probe per candidate, and
    # ``annotator_id + 0`` keeps the planner off the index that leads with the annotator: see
    # tests/annotator/rating/test_history_cost.py.
    item_t, assignment_t = _tables()
    fence = " OFFSET 0" if connection.vendor == "postgresql" else ""
    sql = (
        f"SELECT c.id FROM {item_t} c WHERE c.batch_id = %s AND c.n_annotations < %s"
        " AND c.n_annotations + c.n_leased < %s"
        f" AND NOT EXISTS (SELECT 1 FROM {assignment_t} g WHERE g.item_id = c.id AND g.annotator_id + 0 = %s{fence})"
    )
    if one_system_per_prompt:
        sql += (
            f" AND (c.prompt_id = '' OR NOT EXISTS (SELECT 1 FROM {item_t} gi WHERE gi.batch_id = %s"
            f" AND gi.prompt_id = c.prompt_id AND EXISTS (SELECT 1 FROM {assignment_t} g2 WHERE g2.item_id = gi.id"
            f" AND g2.annotator_id + 0 = %s{fence}){fence}))"
        )
    return sql


def candidate_items(
    *, annotator_id: int, batch_id, k, one_system_per_prompt, free_slot: bool = True
) -> QuerySet[Item]:
    """The ORM spelling of :func:`_candidates_sql`, kept beside it (tests/annotator/rating/test_rule_parity.py
    checks they select the same items). ``batch_id``, ``k`` and ``one_system_per_prompt`` are values or
    ``OuterRef`` to a batch query; ``free_slot=False`` also counts items whose open slots are only held
    by others' leases, which may still come free."""
    if not hasattr(one_system_per_prompt, "resolve_expression"):
        one_system_per_prompt = Value(bool(one_system_per_prompt), output_field=BooleanField())
    given = Assignment.objects.filter(item_id=OuterRef("pk"), annotator_id=annotator_id)
    prompt_given = Assignment.objects.filter(
        annotator_id=annotator_id, item__batch_id=OuterRef("batch_id"), item__prompt_id=OuterRef("prompt_id")
    )
    items = Item.objects.filter(batch_id=batch_id, n_annotations__lt=k).filter(~Exists(given))
    if free_slot:
        items = items.alias(held=F("n_annotations") + F("n_leased")).filter(held__lt=k)
    return items.filter(Q(Exact(one_system_per_prompt, False)) | Q(prompt_id="") | ~Exists(prompt_given))


def _candidates_params(batch, annotator_id: int) -> list:
    params = [batch.pk, batch.k, batch.k, annotator_id]
    return [*params, batch.pk, annotator_id] if batch.one_system_per_prompt else params


def live_lease(*, batch, annotator_id: int, now: datetime) -> Assignment | None:
    """The annotator's oldest unexpired lease in the batch, with its item loaded."""
    lease = (
        Assignment.objects.select_related("item")
        .filter(
            annotator_id=annotator_id, batch=batch, state=Assignment.State.LEASED, lease_expires_at__gt=now
        )
        .order_by("leased_at", "id")
        .first()
    )
    if lease is not None:
        lease.item.batch = batch
    return lease


def any_candidate(*, batch, annotator_id: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT EXISTS ({_candidates_sql(batch.one_system_per_prompt)})",
            _candidates_params(batch, annotator_id),
        )
        return bool(cursor.fetchone()[0])


def _levels(k: int) -> list[tuple[int, int]]:
    """The (n_annotations, n_leased) pairs of an item with a free slot, closest to completion first."""
    return [(a, n) for a in range(k - 1, -1, -1) for n in range(k - 1 - a, -1, -1)]


def _window_sql(vendor: str, one_system_per_prompt: bool, k: int) -> str:
    """The first ``WINDOW`` candidate ids in ``NEXT_ORDER``; parameters: :func:`_window_params`."""
    # On PostgreSQL one index range for the first tier (queue_first > 0, a draw's items) and one per
    # progress level of the rest, so the window never depends on the table's statistics (a batch imported
    # since the last ANALYZE has none; bench/lease_plan.py). SQLite walks the item_next_order index for the
    # plain ORDER BY … LIMIT.
    items = _candidates_sql(one_system_per_prompt)
    if vendor != "postgresql":
        return (
            f"{items} ORDER BY c.queue_first DESC, c.n_annotations DESC, c.n_leased DESC, c.queue_rank"
            f" LIMIT {WINDOW}"
        )
    values = ", ".join("(%s, %s)" for _ in _levels(k))
    return (
        f"({items} AND c.queue_first > 0 ORDER BY c.queue_first DESC LIMIT {WINDOW})"
        f" UNION ALL (SELECT w.id FROM (VALUES {values}) AS level (a, n) CROSS JOIN LATERAL ({items}"
        " AND c.queue_first = 0 AND c.n_annotations = level.a AND c.n_leased = level.n"
        f" ORDER BY c.queue_rank LIMIT {WINDOW}) AS w LIMIT {WINDOW})"
    )


def _window_params(vendor: str, batch, annotator_id: int) -> list:
    candidates = _candidates_params(batch, annotator_id)
    if vendor != "postgresql":
        return candidates
    return [*candidates, *(x for level in _levels(batch.k) for x in level), *candidates]


def _guards_sql() -> str:
    """SQL true when the annotator may rate in the batch and holds no live lease in it;
    parameters: :func:`_guards_params`."""
    return (
        f" AND NOT {_forbidden_sql()}"
        f" AND NOT EXISTS (SELECT 1 FROM {_tables()[1]} a"
        " WHERE a.annotator_id = %s AND a.batch_id = %s AND a.state = %s AND a.lease_expires_at > %s)"
    )


def _guards_params(batch, annotator_id: int, now: datetime) -> list:
    return [
        *_forbidden_params(batch.pk, annotator_id),
        annotator_id,
        batch.pk,
        Assignment.State.LEASED,
        _when(now),
    ]


def _insert_lease_sql() -> str:
    return (
        f"INSERT INTO {_tables()[1]} (item_id, batch_id, annotator_id, state, leased_at, lease_expires_at,"
        " finished_at, skip_reason) VALUES (%s, %s, %s, %s, %s, %s, NULL, '') RETURNING id"
    )


@lru_cache(maxsize=64)
def _lease_sql(vendor: str, one_system_per_prompt: bool, k: int) -> str:
    """The lease statement's text (the same for every lease in a batch); built once per shape."""
    item_t, assignment_t = _tables()
    lock = " FOR UPDATE SKIP LOCKED" if connection.features.has_select_for_update_skip_locked else ""
    take = (
        f"UPDATE {item_t} SET n_leased = n_leased + 1 WHERE id = ("
        f"SELECT p.id FROM {item_t} p WHERE p.id IN ({_window_sql(vendor, one_system_per_prompt, k)})"
        " AND p.n_annotations + p.n_leased < %s"
        f" ORDER BY p.queue_first DESC, p.n_annotations DESC, p.n_leased DESC, RANDOM() LIMIT 1{lock}){_guards_sql()}"
        f" RETURNING {_ITEM_COLUMNS}"
    )
    if vendor != "postgresql":
        return take
    return (
        "WITH durability AS (SELECT set_config('synchronous_commit', 'off', true)),"
        f" picked AS ({take}),"
        f" lease AS (INSERT INTO {assignment_t}"
        " (item_id, batch_id, annotator_id, state, leased_at, lease_expires_at, finished_at, skip_reason)"
        " SELECT id, batch_id, %s, %s, %s, %s, NULL, '' FROM picked RETURNING id)"
        f" SELECT lease.id, {', '.join('picked.' + f.column for f in _ITEM_FIELDS)}"
        " FROM lease, picked, durability"
    )


def lease_statement(*, batch, annotator_id: int, now: datetime, expires: datetime) -> tuple[str, list]:
    """The lease statement's text and parameters (what :func:`lease_best_item` runs; the plan
    tests and ``bench/lease_plan.py`` explain it)."""
    vendor = connection.vendor
    params = [
        *_window_params(vendor, batch, annotator_id),
        batch.k,
        *_guards_params(batch, annotator_id, now),
    ]
    if vendor == "postgresql":
        params += [annotator_id, Assignment.State.LEASED, _when(now), _when(expires)]
    return _lease_sql(vendor, batch.one_system_per_prompt, batch.k), params


def lease_best_item(
    *, batch, annotator, now: datetime, expires: datetime, lock_first: bool = False
) -> Assignment | None:
    """Lock the best free item, count a lease on it and record the lease; None if none is free,
    or the annotator's standing stops them, or they already hold a live lease in the batch.

    Best: an item put first (``queue_first``, a review draw's), highest first; then most submitted
    annotations, then most live leases (closest to completion), then the batch's order
    (``queue_rank``, random for a new batch: ``annotator.rating.services.queue_order``), random among the
    first ``WINDOW`` of those. On PostgreSQL the chosen row is taken with FOR UPDATE
    SKIP LOCKED and its slot re-checked, so it is skipped, never overfilled, when another lease
    changed it; the lease is one statement there, committed without waiting for the WAL flush (a
    crash can only forget the last moment's leases, slot and lease row together). On SQLite the
    caller's ``BEGIN IMMEDIATE`` serialises writers instead.

    ``lock_first`` (PostgreSQL, no transaction open: :func:`leases_in_one_message`): the
    user-row lock of :func:`lock_annotator` and the lease go to the server in one message, which
    runs them as one transaction of their own; the lease statement still starts after the lock
    is granted, so it sees what an exclusion it waited for committed.
    """
    postgres = connection.vendor == "postgresql"
    sql, params = lease_statement(batch=batch, annotator_id=annotator.pk, now=now, expires=expires)
    if lock_first:
        sql, params = f"{_lock_sql()}; {sql}", [annotator.pk, *params]
    # Not prepared, unlike the other rating statements: its best plan changes as the tables grow,
    # and a prepared statement keeps one generic plan for the connection's life.
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        if lock_first:
            cursor.nextset()  # past the lock's row to the lease's
        row = cursor.fetchone()
        if row is None:
            return None
        if postgres:
            lease_id, row = row[0], row[1:]
        else:  # SQLite: the lease row in a second statement, in the same BEGIN IMMEDIATE
            cursor.execute(
                _insert_lease_sql(),
                [row[0], batch.pk, annotator.pk, Assignment.State.LEASED, _when(now), _when(expires)],
            )
            lease_id = cursor.fetchone()[0]
    item = instance_from_row(Item, row)
    item.batch = batch
    lease = Assignment(
        id=lease_id,
        item=item,
        batch=batch,
        annotator=annotator,
        state=Assignment.State.LEASED,
        leased_at=now,
        lease_expires_at=expires,
        finished_at=None,
        skip_reason="",
    )
    lease._state.adding = False
    lease._state.db = connection.alias
    return lease


def lock_annotator(*, annotator_id: int) -> None:
    """On PostgreSQL, key-share lock the user's row for the rest of the transaction.

    An exclusion locks that row for update first (``annotator.quality.services.exclusion``). Leases and
    submissions take this lock before any other, so they queue behind an exclusion instead of
    deadlocking with it (the foreign-key check of a new annotation would otherwise take the same
    lock at commit, after the rows it wrote).
    """
    if connection.vendor == "postgresql":
        with hot_cursor() as cursor:
            cursor.execute(_lock_sql(), [annotator_id])


def _lock_sql() -> str:
    return f"SELECT 1 FROM {connection.ops.quote_name(get_user_model()._meta.db_table)} WHERE id = %s FOR KEY SHARE"


def leases_in_one_message() -> bool:
    """Whether :func:`lease_best_item` may send the user-row lock and the lease as one message, their
    own transaction: on PostgreSQL outside a transaction, where the cursor binds its values on the
    client (a message of two statements cannot carry server-side parameters). It saves the round
    trips of BEGIN, of the lock and of COMMIT."""
    return (
        connection.vendor == "postgresql"
        and not connection.in_atomic_block
        and not connection.settings_dict["OPTIONS"].get("server_side_binding")
    )


def _forbidden_sql() -> str:
    """SQL true when the annotator's standing in the batch stops them rating (the standing rule,
    ``standing_stopped_sql``); parameters: :func:`_forbidden_params`."""
    table = connection.ops.quote_name(AnnotatorStanding._meta.db_table)
    return (
        f"EXISTS (SELECT 1 FROM {table} st WHERE st.batch_id = %s AND st.annotator_id = %s"
        f" AND {standing_stopped_sql('st')[0]})"
    )


def _forbidden_params(batch_id: int, annotator_id: int) -> list:
    return [batch_id, annotator_id, *standing_stopped_sql("st")[1]]


def standing_allows_rating(*, batch_id: int, annotator_id: int, lock: bool = True) -> bool:
    """The standing rule, read in the transaction: False when the annotator is excluded, blocked,
    screened out of the batch or failed its training.

    Takes :func:`lock_annotator` first (unless the caller did: ``lock=False``), then reads the
    standing in a second statement: after waiting for an exclusion's lock, only a new statement
    sees the standing it committed (READ COMMITTED takes a snapshot per statement).
    """
    if lock:
        lock_annotator(annotator_id=annotator_id)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {_forbidden_sql()}", _forbidden_params(batch_id, annotator_id))
        return not cursor.fetchone()[0]


def _when(moment: datetime):
    """A datetime parameter in the form the ORM stores it (a UTC string on SQLite)."""
    return connection.ops.adapt_datetimefield_value(moment)
