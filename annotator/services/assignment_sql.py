"""The two hot statements of assignment, in portable SQL (PostgreSQL and SQLite).

Written by hand because they run on every round trip and the ORM spends more time
building them than the database spends running them. Everything else stays in the ORM.
"""

from __future__ import annotations

from datetime import datetime

from django.db import connection

from annotator.models import Assignment, Item

WINDOW = 64  # free items the random tie-break draws from

_ITEM_FIELDS = [f for f in Item._meta.concrete_fields]
_ITEM_COLUMNS = ", ".join(f.column for f in _ITEM_FIELDS)


def _tables() -> tuple[str, str]:
    qn = connection.ops.quote_name
    return qn(Item._meta.db_table), qn(Assignment._meta.db_table)


def _candidate_filter(*, batch, annotator_id: int) -> tuple[str, list]:
    """WHERE clause (on alias ``c``) of the items with a free slot this annotator may get."""
    item, assignment = _tables()
    sql = (
        "c.batch_id = %s AND c.n_annotations < %s AND c.n_annotations + c.n_leased < %s"
        f" AND NOT EXISTS (SELECT 1 FROM {assignment} a WHERE a.item_id = c.id AND a.annotator_id = %s)"
    )
    params = [batch.pk, batch.k, batch.k, annotator_id]
    if batch.one_system_per_prompt:
        sql += (
            f" AND (c.prompt_id = '' OR NOT EXISTS (SELECT 1 FROM {assignment} a2"
            f" INNER JOIN {item} i2 ON i2.id = a2.item_id"
            " WHERE a2.annotator_id = %s AND i2.batch_id = %s AND i2.prompt_id = c.prompt_id))"
        )
        params += [annotator_id, batch.pk]
    return sql, params


_ASSIGNMENT_FIELDS = [f for f in Assignment._meta.concrete_fields]


def live_lease(*, batch, annotator_id: int, now: datetime) -> Assignment | None:
    """The annotator's oldest unexpired lease in the batch, with its item loaded."""
    item, assignment = _tables()
    a_cols = ", ".join(f"a.{f.column}" for f in _ASSIGNMENT_FIELDS)
    i_cols = ", ".join(f"i.{f.column}" for f in _ITEM_FIELDS)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {a_cols}, {i_cols} FROM {assignment} a INNER JOIN {item} i ON i.id = a.item_id"
            " WHERE a.annotator_id = %s AND a.state = %s AND a.lease_expires_at > %s AND i.batch_id = %s"
            " ORDER BY a.leased_at, a.id LIMIT 1",
            [annotator_id, Assignment.State.LEASED, _when(now), batch.pk],
        )
        row = cursor.fetchone()
    if row is None:
        return None
    n = len(_ASSIGNMENT_FIELDS)
    lease = Assignment.from_db(
        connection.alias, [f.attname for f in _ASSIGNMENT_FIELDS], _convert(Assignment, _ASSIGNMENT_FIELDS, row[:n])
    )
    lease.item = Item.from_db(connection.alias, [f.attname for f in _ITEM_FIELDS], _convert(Item, _ITEM_FIELDS, row[n:]))
    lease.item.batch = batch
    return lease


def any_candidate(*, batch, annotator_id: int) -> bool:
    item, _ = _tables()
    where, params = _candidate_filter(batch=batch, annotator_id=annotator_id)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT 1 FROM {item} c WHERE {where} LIMIT 1", params)
        return cursor.fetchone() is not None


def lease_best_item(*, batch, annotator, now: datetime, expires: datetime) -> Assignment | None:
    """Lock the best free item, count a lease on it and record the lease; None if none is free.

    Best: most submitted annotations, then most live leases (closest to completion), random
    among equals. The inner query walks the ``item_next_order`` index and stops after
    ``WINDOW`` rows, so its cost does not grow with the batch; the random draw is among those.
    On PostgreSQL the chosen row is taken with FOR UPDATE SKIP LOCKED and the slot filter is
    re-checked on it, so a row another lease changed meanwhile is skipped, never overfilled;
    there the whole lease is one statement, which also lets this transaction commit without
    waiting for its WAL flush (a crash could forget the last moment's leases, slot and lease
    row together, which only re-offers those items).
    """
    item_t, assignment_t = _tables()
    where, params = _candidate_filter(batch=batch, annotator_id=annotator.pk)
    postgres = connection.vendor == "postgresql"
    lock = " FOR UPDATE SKIP LOCKED" if connection.features.has_select_for_update_skip_locked else ""
    take = (
        f"UPDATE {item_t} SET n_leased = n_leased + 1 WHERE id = ("
        f"SELECT p.id FROM {item_t} p WHERE p.id IN ("
        f"SELECT c.id FROM {item_t} c WHERE {where}"
        f" ORDER BY c.n_annotations DESC, c.n_leased DESC, c.position LIMIT {int(WINDOW)})"
        " AND p.n_annotations + p.n_leased < %s"
        f" ORDER BY p.n_annotations DESC, p.n_leased DESC, RANDOM() LIMIT 1{lock})"
        f" RETURNING {_ITEM_COLUMNS}"
    )
    params = [*params, batch.k]
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


def assignment_mark_submitted(*, item_id: int, annotator_id: int, now: datetime) -> datetime | None:
    """Turn a live lease into a submission; returns its ``leased_at``, or None if not leased."""
    _, assignment = _tables()
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {assignment} SET state = %s, finished_at = %s"
            " WHERE item_id = %s AND annotator_id = %s AND state = %s RETURNING leased_at",
            [Assignment.State.SUBMITTED, _when(now), item_id, annotator_id, Assignment.State.LEASED],
        )
        row = cursor.fetchone()
    if row is None:
        return None
    return _convert(Assignment, [Assignment._meta.get_field("leased_at")], row)[0]


def _when(moment: datetime):
    """A datetime parameter in the form the ORM stores it (a UTC string on SQLite)."""
    return connection.ops.adapt_datetimefield_value(moment)


def _convert(model, fields, row) -> list:
    """Database values to Python ones, as the ORM converts them (dates on SQLite, JSON)."""
    values = []
    for field, value in zip(fields, row, strict=True):
        col = field.get_col(model._meta.db_table)
        for converter in connection.ops.get_db_converters(col) + col.get_db_converters(connection):
            value = converter(value, col, connection)
        values.append(value)
    return values
