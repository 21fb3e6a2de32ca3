"""Fast inserts of many rows: PostgreSQL COPY, one executemany on SQLite, bulk_create elsewhere.

Rows arrive already validated (``annotator.uploads.files``); these functions only move them, and
then refresh the planner's statistics of the tables they filled (``analyze``).
"""

from __future__ import annotations

import itertools
import json
import operator
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from django.apps import apps
from django.db import connection, models, transaction
from django.utils import timezone
from django_tasks import task

from annotator.db_private import binary_copy_types, copy_rows


def _db_value(field: models.Field, value: Any) -> Any:
    """One Python value as the database takes it (JSON as text, dates as SQLite stores them)."""
    if isinstance(field, models.JSONField):
        return json.dumps(value, ensure_ascii=False)
    return field.get_db_prep_save(value, connection)


def rows_insert(
    *,
    model: type[models.Model],
    fields: Sequence[str],
    rows: Iterable[Sequence],
    constants: Mapping[str, Any] = {},
) -> None:
    """Insert ``rows`` into ``model``'s table. Call inside a transaction.

    ``rows`` hold database-ready values for ``fields`` (numbers, text, JSON as text); ``constants``
    gives one Python value for every row of another field; every other field but the id gets its
    default. Values are converted once per column, not once per row.
    """
    opts = model._meta
    given = [opts.get_field(name) for name in fields]
    fixed = [(opts.get_field(name), value) for name, value in constants.items()]
    named = {f.name for f in given} | {f.name for f, _ in fixed}
    now = timezone.now()
    defaults = [
        (f, now if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False) else f.get_default())
        for f in opts.concrete_fields
        if f.name not in named and not f.primary_key
    ]
    tail = tuple(_db_value(f, v) for f, v in [*fixed, *defaults])
    columns = [f.column for f in given] + [f.column for f, _ in [*fixed, *defaults]]
    table = connection.ops.quote_name(opts.db_table)
    quoted = ", ".join(connection.ops.quote_name(c) for c in columns)
    if connection.vendor == "postgresql":
        types = binary_copy_types(
            [f.db_type(connection) for f in [*given, *(f for f, _ in [*fixed, *defaults])]]
        )
        if types is None:
            # The constant timestamps as text, once, rather than through psycopg's datetime dumper per row.
            tail = tuple(v.isoformat() if isinstance(v, datetime) else v for v in tail)
        # wrap_database_errors: a constraint broken by the COPY raises Django's IntegrityError, as
        # any other write does, so callers can catch the one constraint they mean.
        with connection.wrap_database_errors, connection.cursor() as cursor:
            copy_rows(cursor, f"COPY {table} ({quoted}) FROM STDIN", _with_tail(rows, tail), types)
    elif connection.vendor == "sqlite":
        placeholders = ", ".join(["%s"] * len(columns))
        with connection.cursor() as cursor:  # sqlite3 reads the rows as it inserts them: no list of them all
            cursor.executemany(
                f"INSERT INTO {table} ({quoted}) VALUES ({placeholders})", _with_tail(rows, tail)
            )
    else:  # other databases: the ORM's bulk insert
        attnames = [f.attname for f in given]
        objects = []
        for row in rows:
            values = dict(zip(attnames, row, strict=True))
            for f in given:
                if isinstance(f, models.JSONField):
                    values[f.attname] = json.loads(values[f.attname])
            objects.append(model(**values, **{f.attname: v for f, v in fixed}))
        model.objects.bulk_create(objects, batch_size=2000)


def _with_tail(rows: Iterable[Sequence], tail: tuple) -> Iterable[Sequence]:
    """Each row followed by the constant values; ``tuple + tuple`` in C, not an unpacking per row."""
    if not tail:
        return rows
    return map(operator.add, map(tuple, rows), itertools.repeat(tail))


def ids_reserve(*, model: type[models.Model], count: int) -> list[int]:
    """``count`` new primary keys of ``model``, for rows that ``rows_insert`` then writes with an
    ``id`` column. Rows that point at them (an annotation's scores) are then written without
    reading the new rows back, a query whose plan PostgreSQL gets badly wrong on a table with no
    statistics yet. Call inside the transaction that writes the rows.
    """
    if count <= 0:
        return []
    if not connection.in_atomic_block:
        raise transaction.TransactionManagementError(
            "ids_reserve() must run inside the transaction that uses the ids"
        )
    opts = model._meta
    table, column = connection.ops.quote_name(opts.db_table), connection.ops.quote_name(opts.pk.column)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # Concurrent writers may interleave their ids; they never share one. The sequence is looked
            # up once (a subquery), not once per id; the ids come back as one row: their bounds when
            # they run unbroken (the usual case), else the sorted list.
            cursor.execute(
                "SELECT min(id), max(id), CASE WHEN max(id) - min(id) + 1 = count(*) THEN NULL"
                " ELSE array_agg(id ORDER BY id) END FROM (SELECT"
                " nextval((SELECT pg_get_serial_sequence(%s, %s)::regclass)) AS id"
                " FROM generate_series(1, %s)) AS ids",
                [table, opts.pk.column, count],
            )
            first, last, scattered = cursor.fetchone()
            return list(range(first, last + 1)) if scattered is None else scattered
        if connection.vendor == "sqlite":
            # One writer at a time, and every transaction begins IMMEDIATE (settings.database_config),
            # so the ids after the largest ever given (AUTOINCREMENT keeps it in sqlite_sequence, even
            # when that row was deleted) stay ours until the commit.
            cursor.execute(
                f"SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = %s), 0), "
                f"COALESCE((SELECT MAX({column}) FROM {table}), 0))",
                [opts.db_table],
            )
            start = cursor.fetchone()[0] + 1
            return list(range(start, start + count))
    raise NotImplementedError(f"ids_reserve() supports PostgreSQL and SQLite, not {connection.vendor}")


def analyze_after_commit(*models_: type[models.Model]) -> None:
    """Refresh the planner statistics of the tables a bulk write filled: once it commits, the
    background worker is asked to (``analyze_tables``, queued ahead of other jobs).

    Without them PostgreSQL plans for the tables as they were before the upload until autovacuum
    (which may be off or late) gets there; on a fresh database the next-item query then scanned
    a whole batch. Queued after the commit, so the brief lock ANALYZE takes never makes another
    upload wait for this one, and run by the worker, so the person who uploaded does not wait for
    it either. (SQLite has no statistics unless asked, and its plans use the indexes.)
    """
    if connection.vendor != "postgresql":
        return
    labels = [m._meta.label for m in models_]
    # robust: the write is saved whatever happens here; a failure to queue is logged, not raised.
    transaction.on_commit(lambda: analyze_tables.enqueue(labels=labels), robust=True)


# Ahead of queued jobs (a judge run can hold a worker for long): the rating page plans with these.
ANALYZE_PRIORITY = 50


@task(priority=ANALYZE_PRIORITY)
def analyze_tables(labels: list[str]) -> None:
    """ANALYZE the tables of the models named ``labels`` ("annotator.Item"); the worker runs it."""
    tables = ", ".join(connection.ops.quote_name(apps.get_model(label)._meta.db_table) for label in labels)
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {tables}")
