"""Who is calling the API, with which role, and how often.

A request authenticates with a personal token (``Authorization: Bearer hcs_...``) or, from the
browser (the docs page), with the signed-in session. A token acts with exactly its user's role:
the same ``annotator.roles`` checks the pages use decide, before the request body is read. Token
requests need no CSRF token (a script has no cookie to be tricked into sending); session requests
that change something still pass Django's CSRF check.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import PermissionDenied
from ninja.errors import HttpError
from ninja.security import HttpBearer
from ninja.throttling import SimpleRateThrottle
from ninja.utils import check_csrf

from annotator import roles
from annotator.selectors.api_tokens import api_token_for_key
from annotator.services.api_tokens import api_token_touch

SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}


class ApiAuth(HttpBearer):
    """Bearer token, else the session; then the role check, which answers 403 when it fails."""

    csrf = True  # tells the docs page to send the CSRF token with session requests

    def __init__(self, check: Callable[[object], bool], role: str):
        self.check, self.role = check, role
        super().__init__()

    def __call__(self, request):
        user = None
        header = request.headers.get("Authorization", "")
        if header:
            scheme, _, key = header.partition(" ")
            if scheme.lower() != "bearer":
                return None
            user = self.authenticate(request, key.strip())
        elif request.user.is_authenticated:
            if request.method not in SAFE_METHODS and check_csrf(request):
                raise HttpError(403, "CSRF check failed: a signed-in browser request must send the CSRF token "
                                     "(X-CSRFToken header); scripts should use an API token instead.")
            user = request.user
        if user is None:
            return None
        if not self.check(user):
            raise PermissionDenied(f"This needs the {self.role} role; your account does not have it.")
        return user

    def authenticate(self, request, token: str):
        found = api_token_for_key(token)
        if found is None:
            return None
        api_token_touch(token=found)
        request.user = found.user
        request.api_token = found
        return found.user


signed_in = ApiAuth(lambda user: True, "signed-in")
researchers = ApiAuth(roles.is_researcher, "researcher")
admins = ApiAuth(roles.is_admin, "admin")


def _per_thread(name: str) -> property:
    """An attribute of the request being checked: one throttle object serves every thread."""
    return property(lambda self: getattr(self._state, name), lambda self, value: setattr(self._state, name, value))


class TokenRateThrottle(SimpleRateThrottle):
    """``ANNOTATOR_API_RATE`` requests per token (or per signed-in user for session requests)."""

    scope = "api"
    key, history, now = _per_thread("key"), _per_thread("history"), _per_thread("now")

    def __init__(self):
        self._state = threading.local()
        super().__init__(settings.ANNOTATOR_API_RATE)

    def allow_request(self, request) -> bool:
        self.num_requests, self.duration = self.parse_rate(settings.ANNOTATOR_API_RATE)  # read now: settings may change
        return super().allow_request(request)

    def get_cache_key(self, request):
        token = getattr(request, "api_token", None)
        # The hash, not the row id: ids can come back after a rollback, a key's hash never does.
        ident = f"token-{token.key_hash[:24]}" if token is not None else f"user-{request.user.pk}"
        return self.cache_format % {"scope": self.scope, "ident": ident}

    def wait(self) -> float:
        """Seconds until the oldest request in the window leaves it (always a number: Retry-After)."""
        if not self.history:
            return float(self.duration)
        return max(1.0, self.duration - (self.now - self.history[-1]))
