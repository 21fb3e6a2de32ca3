"""Authentication from the user the session engine already loaded (``annotator.sessions``).

The same checks as ``django.contrib.auth.get_user``: the backend that logged the user in is
still configured, the account is active, and the session hash matches the password (so a
password change logs out every other session). Anything unusual falls back to Django's own.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import auth
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.middleware import AuthenticationMiddleware
from django.contrib.auth.models import AnonymousUser
from django.utils.crypto import constant_time_compare
from django.utils.functional import SimpleLazyObject

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
