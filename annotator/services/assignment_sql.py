"""The lease statement, in SQL written by hand: the one place assignment needs what the ORM cannot say.

``lease_best_item`` takes the best free item with ``FOR UPDATE SKIP LOCKED`` inside an
``UPDATE … RETURNING`` (on PostgreSQL with the lease row inserted by the same statement). Which
items are candidates is an ORM query (:func:`candidates`), embedded here as SQL; the live-lease
lookup and the "anything left?" check are ORM queries too.
"""

from __future__ import annotations

from datetime import datetime

from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Exists, F, OuterRef, Q, QuerySet

from annotator.models import AnnotatorStanding, Assignment, Item
from annotator.selectors.rows import python_values

WINDOW = 64  # free items the random tie-break draws from
NEXT_ORDER = ("-n_annotations", "-n_leased", "position")  # closest to completion first (index item_next_order)

_ITEM_FIELDS = list(Item._meta.concrete_fields)
_ITEM_COLUMNS = ", ".join(f.column for f in _ITEM_FIELDS)


def _tables() -> tuple[str, str]:
    qn = connection.ops.quote_name
    return qn(Item._meta.db_table), qn(Assignment._meta.db_table)


def candidates(*, batch, annotator_id: int) -> QuerySet[Item]:
    """The items of ``batch`` with a free slot (submitted + leased < k) that this annotator may get:
    never given to them before and, with one system per prompt, sharing no prompt with one that was."""
    items = (
        Item.objects.filter(batch=batch, n_annotations__lt=batch.k)
        .filter(n_annotations__lt=batch.k - F("n_leased"))
        .exclude(Exists(Assignment.objects.filter(item_id=OuterRef("pk"), annotator_id=annotator_id)))
    )
    if batch.one_system_per_prompt:
        same_prompt = Assignment.objects.filter(
            annotator_id=annotator_id, item__batch=batch, item__prompt_id=OuterRef("prompt_id")
        )
        items = items.filter(Q(prompt_id="") | ~Exists(same_prompt))
    return items


def live_lease(*, batch, annotator_id: int, now: datetime) -> Assignment | None:
    """The annotator's oldest unexpired lease in the batch, with its item loaded."""
    lease = (
        Assignment.objects.select_related("item")
        .filter(annotator_id=annotator_id, state=Assignment.State.LEASED, lease_expires_at__gt=now, item__batch=batch)
        .order_by("leased_at", "id")
        .first()
    )
    if lease is not None:
        lease.item.batch = batch
    return lease


def any_candidate(*, batch, annotator_id: int) -> bool:
    return candidates(batch=batch, annotator_id=annotator_id).exists()


def _levels(k: int) -> list[tuple[int, int]]:
    """The (n_annotations, n_leased) pairs of an item with a free slot, closest to completion first."""
    return [(a, n) for a in range(k - 1, -1, -1) for n in range(k - 1 - a, -1, -1)]


def _window(*, batch, annotator_id: int) -> tuple[str, list]:
    """The first ``WINDOW`` candidate ids in ``NEXT_ORDER``, as SQL and its parameters.

    On PostgreSQL one index range per progress level (``n_annotations``, ``n_leased``), each read
    in ``position`` order and stopped at ``WINDOW`` rows: the ``item_next_order`` index gives
    that order whatever the planner estimates. The plain ``ORDER BY … LIMIT`` is planned from
    the table's statistics; a batch imported since the last ANALYZE has none, and PostgreSQL then
    sorted the whole batch (48 ms for 20,000 items, against 0.2 ms this way). SQLite walks the
    index for the plain form.
    """
    items = candidates(batch=batch, annotator_id=annotator_id).order_by()
    if connection.vendor != "postgresql":
        return items.order_by(*NEXT_ORDER).values("id")[:WINDOW].query.sql_with_params()
    level_sql, params = items.values("id").query.sql_with_params()
    table = connection.ops.quote_name(Item._meta.db_table)
    levels = _levels(batch.k)
    values = ", ".join("(%s, %s)" for _ in levels)
    sql = (
        f"SELECT w.id FROM (VALUES {values}) AS level (a, n) CROSS JOIN LATERAL ({level_sql}"
        f" AND {table}.n_annotations = level.a AND {table}.n_leased = level.n"
        f" ORDER BY {table}.position LIMIT {WINDOW}) AS w LIMIT {WINDOW}"
    )
    return sql, [*(x for level in levels for x in level), *params]


def _guards(*, batch, annotator_id: int, now: datetime) -> tuple[str, list]:
    """SQL true when the annotator may rate in the batch and holds no live lease in it."""
    item_t, assignment_t = _tables()
    forbidden, params = _forbidden_sql(batch_id=batch.pk, annotator_id=annotator_id)
    sql = (
        f" AND NOT {forbidden}"
        f" AND NOT EXISTS (SELECT 1 FROM {assignment_t} a INNER JOIN {item_t} ai ON ai.id = a.item_id"
        f" WHERE a.annotator_id = %s AND a.state = %s AND a.lease_expires_at > %s AND ai.batch_id = %s)"
    )
    return sql, [*params, annotator_id, Assignment.State.LEASED, _when(now), batch.pk]


def lease_best_item(*, batch, annotator, now: datetime, expires: datetime) -> Assignment | None:
    """Lock the best free item, count a lease on it and record the lease; None if none is free,
    or the annotator may not rate in the batch, or already holds a live lease in it.

    Best: most submitted annotations, then most live leases (closest to completion), random
    among equals. The inner query walks the ``item_next_order`` index and stops after
    ``WINDOW`` rows, so its cost does not grow with the batch; the random draw is among those.
    On PostgreSQL the chosen row is taken with FOR UPDATE SKIP LOCKED and the slot filter is
    re-checked on it, so a row another lease changed meanwhile is skipped, never overfilled;
    there the whole lease is one statement, which also lets this transaction commit without
    waiting for its WAL flush (a crash could forget the last moment's leases, slot and lease
    row together, which only re-offers those items).

    The statement itself checks the annotator's standing and that they hold no live lease in the
    batch (the caller looks for the reason only when nothing was leased). On PostgreSQL the caller
    has key-share locked the user's row in an earlier statement (:func:`lock_annotator`), so this
    statement's snapshot sees an exclusion that committed while it waited.
    """
    item_t, assignment_t = _tables()
    window_sql, params = _window(batch=batch, annotator_id=annotator.pk)
    guards, guard_params = _guards(batch=batch, annotator_id=annotator.pk, now=now)
    postgres = connection.vendor == "postgresql"
    lock = " FOR UPDATE SKIP LOCKED" if connection.features.has_select_for_update_skip_locked else ""
    take = (
        f"UPDATE {item_t} SET n_leased = n_leased + 1 WHERE id = ("
        f"SELECT p.id FROM {item_t} p WHERE p.id IN ({window_sql})"
        " AND p.n_annotations + p.n_leased < %s"
        f" ORDER BY p.n_annotations DESC, p.n_leased DESC, RANDOM() LIMIT 1{lock}){guards}"
        f" RETURNING {_ITEM_COLUMNS}"
    )
    params = [*params, batch.k, *guard_params]
    if postgres:
        sql = (
            "WITH durability AS (SELECT set_config('synchronous_commit', 'off', true)),"
            f" picked AS ({take}),"
            f" lease AS (INSERT INTO {assignment_t}"
            " (item_id, annotator_id, state, leased_at, lease_expires_at, finished_at, skip_reason)"
            " SELECT id, %s, %s, %s, %s, NULL, '' FROM picked RETURNING id)"
            f" SELECT lease.id, {', '.join('picked.' + f.column for f in _ITEM_FIELDS)}"
            " FROM lease, picked, durability"
        )
        params += [annotator.pk, Assignment.State.LEASED, _when(now), _when(expires)]
    else:
        sql = take
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    if postgres:
        lease_id, row = row[0], row[1:]
    item = Item.from_db(connection.alias, [f.attname for f in _ITEM_FIELDS], _convert(Item, _ITEM_FIELDS, row))
    item.batch = batch
    if not postgres:
        return Assignment.objects.create(item=item, annotator=annotator, leased_at=now, lease_expires_at=expires)
    lease = Assignment(
        id=lease_id, item=item, annotator=annotator, state=Assignment.State.LEASED,
        leased_at=now, lease_expires_at=expires, finished_at=None, skip_reason="",
    )
    lease._state.adding = False
    lease._state.db = connection.alias
    return lease


def lock_annotator(*, annotator_id: int) -> None:
    """On PostgreSQL, key-share lock the user's row for the rest of the transaction.

    An exclusion locks that row for update first (``annotator.services.exclusion``). Leases and
    submissions take this lock before any other, so they queue behind an exclusion instead of
    deadlocking with it (the foreign-key check of a new row would otherwise take the same lock
    at commit, after the assignment row).
    """
    if connection.vendor == "postgresql":
        qn = connection.ops.quote_name
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT 1 FROM {qn(get_user_model()._meta.db_table)} WHERE id = %s FOR KEY SHARE", [annotator_id]
            )


def _forbidden_sql(*, batch_id: int, annotator_id: int) -> tuple[str, list]:
    """SQL true when the annotator's standing in the batch forbids rating: excluded, blocked,
    screened out or failed training (``AnnotatorStanding.may_rate``)."""
    table = connection.ops.quote_name(AnnotatorStanding._meta.db_table)
    sql = (
        f"EXISTS (SELECT 1 FROM {table} st WHERE st.batch_id = %s AND st.annotator_id = %s AND (st.excluded"
        " OR st.blocked_at IS NOT NULL OR st.screened_out_at IS NOT NULL OR st.training = %s))"
    )
    return sql, [batch_id, annotator_id, AnnotatorStanding.Training.FAILED]


def may_rate(*, batch_id: int, annotator_id: int, lock: bool = True) -> bool:
    """False when the annotator is excluded, blocked or screened out of the batch.

    Takes :func:`lock_annotator` first (unless the caller did: ``lock=False``), then reads the
    standing in a second statement: after waiting for an exclusion's lock, only a new statement
    sees the standing it committed (READ COMMITTED takes a snapshot per statement).
    """
    if lock:
        lock_annotator(annotator_id=annotator_id)
    forbidden, params = _forbidden_sql(batch_id=batch_id, annotator_id=annotator_id)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {forbidden}", params)
        return not cursor.fetchone()[0]


def _when(moment: datetime):
    """A datetime parameter in the form the ORM stores it (a UTC string on SQLite)."""
    return connection.ops.adapt_datetimefield_value(moment)


_convert = python_values  # database values to Python ones, as the ORM converts them
