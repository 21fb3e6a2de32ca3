"""The API's JSON body parser: a body must be JSON text that the database can store.

A lone surrogate (``"\\ud800"`` without its pair) is valid JSON but not a character: no database
stores it and no page or file can show it, so a body holding one is refused with the place it is
at, before any operation reads a field. The refusal and every other parse failure reach the
problem handler as the cause of django-ninja's 400 (``annotator.api.problems``).
"""

from __future__ import annotations

import json
import re

from ninja.parser import Parser

from annotator.uploads.files.json_text import json_loads, json_problem, surrogate_path

# Only an escape can make a lone surrogate once the body is strict UTF-8; any \u escape of
# U+D800-U+DFFF (pairs included) sends the decoded body to the walk that tells pairs apart.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


class BodyRefused(ValueError):
    """Why the body cannot be read, in words for the caller."""


class StrictJsonParser(Parser):
    def parse_body(self, request):
        try:
            text = request.body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BodyRefused(
                f"The request body is not UTF-8 text (byte {exc.start + 1}); send JSON encoded as UTF-8."
            ) from None
        try:
            value = json_loads(text)
        except json.JSONDecodeError as exc:
            raise BodyRefused(
                f"The request body is not valid JSON ({json_problem(exc, f'line {exc.lineno}, column {exc.colno}')})."
            ) from None
        if _SURROGATE_ESCAPE.search(request.body):
            where = surrogate_path(value)
            if where is not None:
                raise BodyRefused(
                    f"The request body holds a lone surrogate (an escape like \\ud800 without its pair) at {where}; "
                    "it is not a character. Send the character itself or both halves of its pair. Nothing was saved."
                )
        return value
