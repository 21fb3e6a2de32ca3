"""Django's PostgreSQL backend, each query and the connection health check bounded by
``settings.DB_QUERY_DEADLINE_S`` (0: no deadline, as in management commands and the worker)."""

from __future__ import annotations

from django.conf import settings
from django.db.backends.postgresql import base

from annotator.db_deadline import guarded
from annotator.db_private import QuietHealthCheck


class DatabaseWrapper(QuietHealthCheck, base.DatabaseWrapper):  # the health check: no round trip when quiet
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.execute_wrappers.append(self._deadline)

    def _deadline(self, execute, sql, params, many, context):
        with guarded(self, getattr(settings, "DB_QUERY_DEADLINE_S", 0)):
            return execute(sql, params, many, context)

    def is_usable(self):
        # The health check (CONN_HEALTH_CHECKS) runs before a request's first query when the
        # connection's socket is not quiet; a stalled server must fail it, so the request reconnects
        # (bounded by connect_timeout) instead of hanging.
        with guarded(self, getattr(settings, "DB_QUERY_DEADLINE_S", 0)):
            return super().is_usable()
