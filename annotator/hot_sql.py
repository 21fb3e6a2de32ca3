"""A cursor for the few hand-written statements every rating request runs.

On PostgreSQL these statements are prepared once per connection (the protocol's own prepared
statements, through psycopg's server-side binding) and then only executed: planning the rating
facts statement (five joins, three sub-selects) took 3.6–4.5 ms against 0.3 ms to run it
(``EXPLAIN ANALYZE`` on the benchmark database), and the session, submission and progress
statements 1–2 ms each. The lease statement is the exception (``services/assignment_sql``): its
best plan changes as the batch fills, and a prepared statement keeps one generic plan for the
connection's life. The ORM's own queries keep Django's client-side binding, which never
prepares, and psycopg keeps no record of the ORM's statements: the prepare threshold is set only
while a hot cursor is open. ``DB_PREPARED_STATEMENTS=0`` turns this off, for a connection pooler
that cannot keep prepared statements (PgBouncer before 1.22 in transaction mode). SQLite gets the
usual cursor.

A migration that changes a column these statements return makes PostgreSQL refuse the prepared
plans ("cached plan must not change result type"): the connection is then closed at the end of
the request, so the next one prepares them again.
"""

from __future__ import annotations

from contextlib import contextmanager

from django.conf import settings
from django.db import DatabaseError, connection
from django.db.backends.utils import CursorDebugWrapper


class _PreparedDebugCursor(CursorDebugWrapper):
    """Logs a prepared statement by its text (``%s`` for the values) where the usual debug cursor
    logs nothing: psycopg keeps no composed query for a prepared execution."""

    def execute(self, sql, params=None):
        with self.debug_sql(sql, params):
            return self._execute_with_wrappers(sql, params, many=False, executor=self._execute)


def hand_written_sql() -> bool:
    """Whether the rating path's statements written by hand run: on PostgreSQL only. SQLite runs
    in the worker's own process, where the ORM's spellings cost about as much and are one less
    dialect to keep right."""
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
    wrapping); only the psycopg cursor class differs, for this one cursor.
    """
    if not prepares():
        with connection.cursor() as cursor:
            yield cursor
        return
    import psycopg

    connection.ensure_connection()
    raw = connection.connection
    factory = raw.cursor_factory
    raw.cursor_factory = psycopg.Cursor  # server-side binding: the statement text has no values in it
    try:
        cursor = connection.cursor()
    finally:
        raw.cursor_factory = factory
    if isinstance(cursor, CursorDebugWrapper):  # DEBUG or a test capturing queries
        cursor = _PreparedDebugCursor(cursor.cursor, connection)
    raw = cursor.cursor.connection  # the same, unless the health check reconnected
    threshold = raw.prepare_threshold
    # Prepare on first use, only while this cursor is open: at Django's None psycopg neither
    # prepares nor keeps a record of the ORM's statements (their full text, values included).
    raw.prepare_threshold = 0
    try:
        with cursor:
            yield cursor
    except DatabaseError as exc:
        if "cached plan must not change result type" in str(exc):
            connection.close_at = 0  # closed when the request ends (CONN_MAX_AGE's own check)
        raise
    finally:
        raw.prepare_threshold = threshold
