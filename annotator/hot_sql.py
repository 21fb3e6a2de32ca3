"""A cursor for the few hand-written statements every rating request runs.

On PostgreSQL these statements are prepared once per connection (the protocol's own prepared
statements, through psycopg's server-side binding) and then only executed: planning the rating
facts statement (five joins, three sub-selects) took 3.6–4.5 ms against 0.3 ms to run it
(``EXPLAIN ANALYZE`` on the benchmark database), and the session, lease, submission and progress
statements 1–2 ms each. The ORM's own queries keep Django's client-side binding, which never
prepares. ``DB_PREPARED_STATEMENTS=0`` turns this off, for a connection pooler that cannot keep
prepared statements (PgBouncer before 1.21 in transaction mode). SQLite gets the usual cursor.
"""

from __future__ import annotations

from contextlib import contextmanager

from django.conf import settings
from django.db import connection
from django.db.backends.utils import CursorDebugWrapper


class _PreparedDebugCursor(CursorDebugWrapper):
    """Logs a prepared statement by its text (``%s`` for the values) where the usual debug cursor
    logs nothing: psycopg keeps no composed query for a prepared execution."""

    def execute(self, sql, params=None):
        with self.debug_sql(sql, params):
            return self._execute_with_wrappers(sql, params, many=False, executor=self._execute)


def prepares() -> bool:
    """True when :func:`hot_cursor` prepares its statements (PostgreSQL, unless turned off)."""
    return connection.vendor == "postgresql" and settings.DB_PREPARED_STATEMENTS


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
    raw.prepare_threshold = 0  # prepare on first use; Django's client-side cursors never prepare
    try:
        cursor = connection.cursor()
    finally:
        raw.cursor_factory = factory
    if isinstance(cursor, CursorDebugWrapper):  # DEBUG or a test capturing queries
        cursor = _PreparedDebugCursor(cursor.cursor, connection)
    with cursor:
        yield cursor
