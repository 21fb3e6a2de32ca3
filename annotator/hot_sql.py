"""A cursor for the few hand-written statements every rating request runs on PostgreSQL.

There these statements are prepared once per connection and then only executed: planning them
costs the database more than running them (docs/performance.md, "One SQL dialect"). The lease
statement is the exception (``services/assignment_sql``): its best plan changes as the batch
fills, and a prepared statement keeps one generic plan for the connection's life.
``DB_PREPARED_STATEMENTS=0`` turns preparing off, for a connection pooler that cannot keep
prepared statements (PgBouncer before 1.22 in transaction mode). On SQLite it is the usual
cursor; statements only PostgreSQL can run check :func:`hand_written_sql`.

A migration that changes a column these statements return makes PostgreSQL refuse the prepared
plans ("cached plan must not change result type"): the connection is then closed at the end of
the request, so the next one prepares them again.
"""

from __future__ import annotations

from contextlib import contextmanager

from django.conf import settings
from django.db import DatabaseError, connection

from annotator.db_private import preparing_cursor


def hand_written_sql() -> bool:
    """Whether the statements written in PostgreSQL's own dialect run (data-modifying CTEs,
    ``LATERAL``, row locks); elsewhere their ORM spellings run, so no second dialect is kept."""
    return connection.vendor == "postgresql"


def prepares() -> bool:
    """True when :func:`hot_cursor` prepares its statements (PostgreSQL with psycopg 3, unless turned off)."""
    if connection.vendor != "postgresql" or not settings.DB_PREPARED_STATEMENTS:
        return False
    from django.db.backends.postgresql.psycopg_any import is_psycopg3

    return is_psycopg3


@contextmanager
def hot_cursor():
    """``connection.cursor()``, whose statements PostgreSQL plans once per connection.

    Django's cursor path is kept (health check, time zone loader, query logging, error
    wrapping); only the psycopg cursor differs, for this one cursor.
    """
    if not prepares():
        with connection.cursor() as cursor:
            yield cursor
        return
    try:
        with preparing_cursor() as cursor:
            yield cursor
    except DatabaseError as exc:
        if "cached plan must not change result type" in str(exc):
            connection.close_at = 0  # closed when the request ends (CONN_MAX_AGE's own check)
        raise
