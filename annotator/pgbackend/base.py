"""Django's PostgreSQL backend, each query and the connection health check bounded by
``settings.DB_QUERY_DEADLINE_S`` (0: no deadline, as in management commands and the worker), and
every call refused at once while this process has found the database stalled (``db_deadline.stall``)."""

from __future__ import annotations

from django.conf import settings
from django.db import OperationalError
from django.db.backends.postgresql import base

from annotator.db_deadline import guarded, stall
from annotator.db_private import QuietHealthCheck

STALLED = "The database is not answering (a check on a fresh connection found it stalled); try again shortly."


def _refuse_if_stalled() -> None:
    if stall.refuse():
        raise OperationalError(f"{STALLED} ({stall.open_reason or 'recovering'})")


def _guarded(db):
    return guarded(db, getattr(settings, "DB_QUERY_DEADLINE_S", 0), getattr(settings, "DB_STALL_CHECK_S", 0))


class DatabaseWrapper(QuietHealthCheck, base.DatabaseWrapper):  # the health check: no round trip when quiet
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.execute_wrappers.append(self._deadline)

    def _deadline(self, execute, sql, params, many, context):
        _refuse_if_stalled()
        with _guarded(self):
            return execute(sql, params, many, context)

    def get_new_connection(self, conn_params):
        # No connection attempt (a connect timeout's worth of waiting) while the database is stalled, and
        # an attempt under way is left as soon as a stall is found.
        _refuse_if_stalled()
        check_after = getattr(settings, "DB_STALL_CHECK_S", 0)
        if not check_after:
            return super().get_new_connection(conn_params)
        connection = stall.connect(
            lambda: super(DatabaseWrapper, self).get_new_connection(conn_params), check_after
        )
        if connection is None:
            raise OperationalError(f"{STALLED} ({stall.open_reason})")
        return connection

    # COMMIT and ROLLBACK are sent by psycopg itself, not through a cursor, so they are bounded here:
    # a commit met by a stall is cut with the rest (the request answers 503; a rating whose commit
    # did arrive is found when it is sent again, and kept once).
    def _commit(self):
        with _guarded(self):
            return super()._commit()

    def _rollback(self):
        with _guarded(self):
            return super()._rollback()

    def is_usable(self):
        # The health check (CONN_HEALTH_CHECKS) runs before a request's first query when the
        # connection's socket is not quiet; a stalled server must fail it, so the request reconnects
        # (bounded by connect_timeout, or refused at once once the stall is known) instead of hanging.
        if stall.refuse():
            return False
        with _guarded(self):
            return super().is_usable()
