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
from ninja.throttling import BaseThrottle
from ninja.utils import check_csrf

from annotator import roles
from annotator.api.problems import RATE_LIMITED, Problem
from annotator.env import rate_parts
from annotator.selectors.api_tokens import api_token_for_key
from annotator.services.api_tokens import api_token_touch
from annotator.services.rate_limit import client_key, rate_count_add, rate_count_read
from annotator.services.tokens import token_hash

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
                raise HttpError(
                    403,
                    "CSRF check failed: a signed-in browser request must send the CSRF token "
                    "(X-CSRFToken header); scripts should use an API token instead.",
                )
            user = request.user
        if user is None:
            return None
        if not self.check(user):
            raise PermissionDenied(f"This needs the {self.role} role; your account does not have it.")
        return user

    def authenticate(self, request, token: str):
        # Failed attempts are limited per address, before the lookup: guessing keys stops at the limit.
        address = client_key(request, scope="api-token-failure")
        limit = settings.ANNOTATOR_API_TOKEN_FAILURES_PER_MINUTE
        failed = rate_count_read(key=address, limit=limit)
        if failed.count >= limit:
            raise Problem(
                429,
                f"Too many failed API token attempts from this address; try again in "
                f"{failed.retry_after_s} s with a valid token.",
                kind=RATE_LIMITED,
                headers={"Retry-After": str(failed.retry_after_s)},
            )
        found = api_token_for_key(token)
        if found is None:
            rate_count_add(key=address, limit=limit)
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
    return property(
        lambda self: getattr(self._state, name), lambda self, value: setattr(self._state, name, value)
    )


class TokenRateThrottle(BaseThrottle):
    """``ANNOTATOR_API_RATE`` requests per token (or per signed-in user for session requests), counted in
    the database so that every process of every app server shares one allowance."""

    retry_after = _per_thread("retry_after")

    def __init__(self):
        self._state = threading.local()

    def allow_request(self, request) -> bool:
        limit, period = rate_parts(settings.ANNOTATOR_API_RATE)  # read now: settings may change
        token = getattr(request, "api_token", None)
        # The hash, not the row id: ids can come back after a rollback, a key's hash never does.
        ident = f"api:token-{token.key_hash[:24]}" if token is not None else f"api:user-{request.user.pk}"
        counted = rate_count_add(key=token_hash(ident), limit=limit, period_s=period)
        self.retry_after = counted.retry_after_s
        return not counted.over

    def wait(self) -> float:
        """Seconds until the window ends (always a number: Retry-After)."""
        return float(self.retry_after)
