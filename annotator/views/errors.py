"""Error pages: a database that does not answer (restart, failover) is a 503 with a way back; a page
refused to an account says which role it needs."""

from __future__ import annotations

import sys

from django.contrib.sessions.exceptions import SessionInterrupted
from django.db import InterfaceError, OperationalError
from django.http import HttpResponse, HttpResponseBadRequest, HttpResponseServerError
from django.shortcuts import render
from django.template import loader
from django.views.decorators.csrf import requires_csrf_token

from annotator.roles import role_names

RETRY_AFTER_S = 5


@requires_csrf_token
def server_error(request):
    """handler500. Django calls it while handling the exception, so ``sys.exc_info()`` names it.

    A lost database connection is temporary and saved nothing half-way (every write is one
    transaction), so the page says to send the form again, and the status is 503 with Retry-After
    for load balancers and scripts. Anything else stays a plain 500.
    """
    exc = sys.exc_info()[1]
    if isinstance(exc, DATABASE_OUTAGE):
        return outage_response()
    return HttpResponseServerError(loader.render_to_string("500.html"))


DATABASE_OUTAGE = (OperationalError, InterfaceError)


def outage_response() -> HttpResponse:
    """The 503 page with Retry-After. No request context: the context processors read the
    database, which is what failed."""
    body = loader.render_to_string("503.html", {"retry_after": RETRY_AFTER_S})
    response = HttpResponse(body, status=503)
    response["Retry-After"] = str(RETRY_AFTER_S)
    return response


class DatabaseOutageMiddleware:
    """A view that loses the database answers the 503 page with DEBUG on as well as off.

    handler500 only runs with DEBUG off; with it on (``make demo``) a person rating through a
    database restart would get Django's debug page instead of being told to send the form again.
    Errors raised outside a view still reach handler500."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if isinstance(exception, DATABASE_OUTAGE):
            return outage_response()
        return None


@requires_csrf_token
def bad_request(request, exception):
    """handler400: a request Django refuses before any view (a session ended by another tab while this
    request ran, a malformed request). Says what happened and what to do, instead of "Bad Request (400)"."""
    context = {"session_ended": isinstance(exception, SessionInterrupted)}
    # No request context: the context processors read the database, which may be what failed.
    return HttpResponseBadRequest(loader.render_to_string("400.html", context))


ROLE_USES = {
    "admin": "uploads, studies and assignment",
    "researcher": "reports, LLM judges and adjudication",
    "annotator": "rating items",
}


@requires_csrf_token
def permission_denied(request, exception):
    """handler403: the role the page needs (when a role decorator refused it), the account's own
    roles and a way back, inside the site's frame. API paths keep their problem details."""
    reason = str(exception) or "Your account may not open this page."
    if request.path.startswith("/api/"):
        from annotator.api.problems import problem_response  # the API's modules stay out of page workers

        return problem_response(request, 403, reason)
    needed = getattr(exception, "role", None)
    context = {
        "reason": reason,
        "needed": needed,
        "needed_for": ROLE_USES.get(needed, ""),
        "roles": role_names(getattr(request, "user", None)),
    }
    return render(request, "403.html", context, status=403)
