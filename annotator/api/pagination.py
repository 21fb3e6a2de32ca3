"""Cursor pagination: an opaque cursor names the last row of the page before, so pages stay
stable while rows are added (no offsets that shift) and every page costs the same."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from django.http import HttpRequest

from annotator.api.problems import BAD_CURSOR, Problem

DEFAULT_LIMIT = 200
MAX_LIMIT = 1000


def encode_cursor(values: list[Any]) -> str:
    raw = json.dumps(values, separators=(",", ":"), default=str).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(cursor: str | None, types: tuple[type, ...]) -> list[Any] | None:
    """The values a cursor carries, checked against ``types``; a 400 problem for anything else."""
    if not cursor:
        return None
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        values = json.loads(raw)
        if not isinstance(values, list) or len(values) != len(types):
            raise ValueError
        return [t(v) for t, v in zip(types, values)]
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError, RecursionError):
        raise Problem(
            400, "The cursor is not one this API gave out; start again without it.", kind=BAD_CURSOR
        ) from None


def next_link(request: HttpRequest, cursor: str | None) -> str | None:
    """The URL of the next page: this request's URL with ``cursor`` replaced."""
    if cursor is None:
        return None
    query = request.GET.copy()
    query["cursor"] = cursor
    return request.build_absolute_uri(f"{request.path}?{query.urlencode()}")
