"""Errors of the HTTP API as problem details (RFC 9457): ``application/problem+json`` with
``type``, ``title``, ``status``, ``detail`` and ``instance``, plus ``errors`` (one entry per bad row
or field, with its row number) where there are several.

Every exception the API can meet is turned into one here, so each error has one shape wherever
it was raised: a service's ``ImportRefused``, a schema's validation error, a missing token, a role
that does not fit, the rate limit.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from http import HTTPStatus
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from ninja.errors import AuthenticationError, HttpError, Throttled, ValidationError

from annotator.api.parser import BodyRefused
from annotator.uploads.files.errors import FileRefused, ImportRefused, RowError

MEDIA_TYPE = "application/problem+json"
API_PREFIX = "/api/"
# Problem types: a tag URI (RFC 4151) names each kind of problem the API reports beyond a bare
# HTTP status ("about:blank"); the README lists them.
TYPE_BASE = "tag:hcs-annotator,2026:problem/"
INVALID_ROWS = "invalid-rows"
INVALID_FILE = "invalid-file"
INVALID_REQUEST = "invalid-request"
BATCH_CLOSED = "batch-closed"
RATE_LIMITED = "rate-limited"
BAD_CURSOR = "bad-cursor"


class Problem(Exception):
    """Raise from an API operation to answer with a problem of a given type."""

    def __init__(
        self,
        status: int,
        detail: str,
        *,
        kind: str | None = None,
        errors: list[dict] | None = None,
        headers: dict[str, str] | None = None,
    ):
        super().__init__(detail)
        self.status, self.detail, self.kind, self.errors, self.headers = (
            status,
            detail,
            kind,
            errors,
            headers or {},
        )


def problem_response(
    request: HttpRequest,
    status: int,
    detail: str,
    *,
    kind: str | None = None,
    errors: list[dict] | None = None,
    headers: dict[str, str] | None = None,
) -> HttpResponse:
    body: dict[str, Any] = {
        "type": TYPE_BASE + kind if kind else "about:blank",
        "title": HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
        "instance": request.get_full_path(),
    }
    if errors is not None:
        body["errors"] = errors
    response = HttpResponse(json.dumps(body, ensure_ascii=False), status=status, content_type=MEDIA_TYPE)
    for name, value in (headers or {}).items():
        response[name] = value
    return response


def row_errors(errors: Iterable[RowError]) -> list[dict]:
    """Row errors as JSON, in row order: ``row`` is the item's line (1 = the first item), or null."""
    return [
        {"row": e.row, "column": e.column, "message": e.message}
        for e in sorted(errors, key=lambda e: e.sort_key)
    ]


def _on_problem(request, exc: Problem) -> HttpResponse:
    return problem_response(
        request, exc.status, exc.detail, kind=exc.kind, errors=exc.errors, headers=exc.headers
    )


def _on_import_refused(request, exc: ImportRefused) -> HttpResponse:
    return problem_response(
        request, 422, f"{exc} Nothing was saved.", kind=INVALID_ROWS, errors=row_errors(exc.errors)
    )


def _on_file_refused(request, exc: FileRefused) -> HttpResponse:
    return problem_response(request, 400, str(exc), kind=INVALID_FILE)


def _on_validation(request, exc: ValidationError) -> HttpResponse:
    errors = []
    for e in exc.errors:
        loc = [str(part) for part in e.get("loc", ())]
        where, field = (loc[0], [p for p in loc[1:] if p != "payload"]) if loc else ("body", [])
        errors.append(
            {"row": None, "column": ".".join(field) or None, "in": where, "message": e.get("msg", "")}
        )
    return problem_response(
        request,
        422,
        "The request does not match the schema; see errors.",
        kind=INVALID_REQUEST,
        errors=errors,
    )


def _on_authentication(request, exc: AuthenticationError) -> HttpResponse:
    return problem_response(
        request,
        401,
        "Send a valid API token as 'Authorization: Bearer <token>' (make one on the API tokens page "
        "or with manage.py api_token); it may have expired or been revoked.",
        headers={"WWW-Authenticate": 'Bearer realm="api"'},
    )


def _on_forbidden(request, exc: PermissionDenied) -> HttpResponse:
    return problem_response(request, 403, str(exc) or "Your account does not have the role this needs.")


def _on_not_found(request, exc: Http404) -> HttpResponse:
    return problem_response(request, 404, str(exc) or "Not found.")


def _on_http_error(request, exc: HttpError) -> HttpResponse:
    if isinstance(exc.__cause__, BodyRefused):  # the parser's reason is the cause of ninja's bare 400
        return problem_response(request, exc.status_code, str(exc.__cause__), kind=INVALID_REQUEST)
    return problem_response(request, exc.status_code, str(exc))


def _on_throttled(request, exc: Throttled) -> HttpResponse:
    wait = max(1, int(-(-(exc.wait or 1) // 1)))
    return problem_response(
        request,
        429,
        f"Too many requests for this token; try again in {wait} s.",
        kind=RATE_LIMITED,
        headers={"Retry-After": str(wait)},
    )


HANDLERS = {
    Problem: _on_problem,
    ImportRefused: _on_import_refused,
    FileRefused: _on_file_refused,
    ValidationError: _on_validation,
    AuthenticationError: _on_authentication,
    PermissionDenied: _on_forbidden,
    Http404: _on_not_found,
    HttpError: _on_http_error,
    Throttled: _on_throttled,
}


def install_handlers(api) -> None:
    for exc_class, handler in HANDLERS.items():
        api.add_exception_handler(exc_class, handler)


class ApiProblemMiddleware:
    """Under ``/api/``, an error response nobody made a problem of (Django's 404 for an unknown path,
    the router's 405, a 500/503 page) is answered as problem details with the same status and headers."""

    KEEP_HEADERS = ("Allow", "Retry-After", "WWW-Authenticate")

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if (
            request.path.startswith(API_PREFIX)
            and response.status_code >= 400
            and not response.get("Content-Type", "").startswith(("application/json", MEDIA_TYPE))
        ):
            detail = {
                404: "No API route has this path; see /api/v1/docs.",
                405: f"This path does not take {request.method}.",
            }.get(response.status_code, HTTPStatus(response.status_code).description or "The request failed.")
            headers = {h: response[h] for h in self.KEEP_HEADERS if response.has_header(h)}
            return problem_response(request, response.status_code, detail, headers=headers)
        return response
