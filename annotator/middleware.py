"""The app's own middleware: the user from the session's own query, and a request queued too long
for a thread answered 503 at once.

**The user.** Authentication from the user the session engine already loaded
(``annotator.sessions``). The same checks as ``django.contrib.auth.get_user``: the backend that logged the user in is
still configured, the account is active, and the session hash matches the password (so a
password change logs out every other session). Anything unusual falls back to Django's own.

**The queue deadline.** A request that waited too long for an app server thread is answered 503
before anything runs. Behind the shipped nginx config every request carries ``X-Request-Start: t=<seconds since the epoch>``
(nginx's ``$msec``, set when nginx read the request). gunicorn queues a request until one of its
threads is free; one that reaches a thread more than ``REQUEST_QUEUE_DEADLINE_S`` seconds after nginx
stamped it (a database stall holding every thread, a burst of logins) gets the same answer as a
request the stall breaker cuts: the 503 page (whose ``#error-message`` htmx shows beside the form), or
a 503 problem under ``/api/``, with ``Retry-After``. Any request may be refused this way: none of it
ran (no session was read, no view was called, nothing was written), and the person's input is still
in their form, so sending it again is safe. Answering at once frees the thread for the requests that
are still fresh, instead of working through a queue whose clients have given up or are about to.

The header is read only behind a proxy (``PROXY_COUNT`` of at least 1), which overwrites whatever a
client sent; without one a client could set it. A stamp in the future, or one that does not parse,
lets the request through: a wrong clock or a made-up header never refuses anything.
"""

from __future__ import annotations

import logging
import math
import time

from django.conf import settings
from django.contrib import auth
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.middleware import AuthenticationMiddleware
from django.contrib.auth.models import AnonymousUser
from django.utils.crypto import constant_time_compare
from django.utils.functional import SimpleLazyObject

from annotator.views.errors import RETRY_AFTER_S, outage_response

MODEL_BACKEND = f"{ModelBackend.__module__}.{ModelBackend.__qualname__}"


def session_user(request):
    session = request.session
    user_id = session.get(SESSION_KEY)  # loads the session (and its user) if not loaded yet
    user = getattr(session, "loaded_user", None)
    backend = session.get(BACKEND_SESSION_KEY)
    if (
        user is None
        or user_id is None
        or str(user.pk) != str(user_id)
        or backend != MODEL_BACKEND
        or backend not in settings.AUTHENTICATION_BACKENDS
    ):
        return auth.get_user(request)
    if not ModelBackend().user_can_authenticate(user):
        return AnonymousUser()
    session_hash = session.get(HASH_SESSION_KEY)
    current = user.get_session_auth_hash()
    if session_hash and constant_time_compare(session_hash, current):
        return user
    if session_hash and any(
        constant_time_compare(session_hash, h) for h in user.get_session_auth_fallback_hash()
    ):
        session.cycle_key()  # signed with a retired SECRET_KEY: re-sign, as Django does
        session[HASH_SESSION_KEY] = current
        return user
    session.flush()
    return AnonymousUser()


def _request_user(request):
    if not hasattr(request, "_cached_user"):
        request._cached_user = session_user(request)
    return request._cached_user


class SessionUserMiddleware(AuthenticationMiddleware):
    """Django's ``AuthenticationMiddleware`` with ``request.user`` taken from the session's row."""

    def process_request(self, request):
        super().process_request(request)
        request.user = SimpleLazyObject(lambda: _request_user(request))


logger = logging.getLogger(__name__)

HEADER = "HTTP_X_REQUEST_START"


def request_start(value: str) -> float | None:
    """Seconds since the epoch from ``t=1700000000.123`` (or a bare number), or None."""
    value = value.strip()
    if value.startswith("t="):
        value = value[2:]
    try:
        stamp = float(value)
    except ValueError:
        return None
    return stamp if math.isfinite(stamp) and stamp > 0 else None


def queued_seconds(request, now: float | None = None) -> float | None:
    """How long ``request`` waited since the proxy stamped it; None when it is not to be trusted."""
    if settings.ANNOTATOR_PROXY_COUNT < 1:
        return None
    stamp = request_start(request.META.get(HEADER, ""))
    if stamp is None:
        return None
    return (time.time() if now is None else now) - stamp


class RequestQueueDeadlineMiddleware:
    """First in the chain that reads anything: refuses a request queued past the deadline."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        deadline = settings.REQUEST_QUEUE_DEADLINE_S
        if deadline > 0:
            waited = queued_seconds(request)
            if waited is not None and waited > deadline:
                logger.warning(
                    "%s %s waited %.1f s for a thread: answered 503", request.method, request.path, waited
                )
                return self.refused(request)
        return self.get_response(request)

    @staticmethod
    def refused(request):
        if request.path.startswith("/api/"):
            from annotator.api.problems import problem_response  # the API's modules stay out of page workers

            return problem_response(
                request,
                503,
                f"The server is busy; nothing was done. Send the request again in {RETRY_AFTER_S} seconds.",
                headers={"Retry-After": str(RETRY_AFTER_S)},
            )
        return outage_response()
