"""``json.loads`` for text from uploads: every failure is a ``json.JSONDecodeError``.

The standard parser raises other errors for two kinds of hostile input: an integer with more
digits than Python converts (``ValueError``, over 4,300 digits) and arrays or objects nested
deeper than the recursion limit (``RecursionError``). Callers that catch ``JSONDecodeError`` to
report a row error would otherwise let those through as a crash.

JSON can also carry a NUL character as ``\\u0000``, which no PostgreSQL text or jsonb value can
hold: :func:`has_nul` finds one anywhere in a decoded value. A lone surrogate (``\\ud800`` without
its pair) is not a character at all: it cannot be written as UTF-8, so neither database stores it;
:func:`has_lone_surrogate` finds one.
"""

from __future__ import annotations

import json
import re
from typing import Any

SURROGATE = re.compile("[\ud800-\udfff]")


def json_loads(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except ValueError:
        raise json.JSONDecodeError("a number has too many digits", text, 0) from None
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply", text, 0) from None


def json_problem(exc: json.JSONDecodeError, where: str | None = None) -> str:
    """The parser's message with where it stopped: "Unterminated string starting at character 2".

    Some of the parser's messages already end in "at" ("Unterminated string starting at"), so
    appending " at character N" would read "at at"."""
    message = exc.msg.removesuffix(" at")
    return f"{message} at {where or f'character {exc.pos + 1}'}"


def _any_text(value: Any, found) -> bool:
    """True when ``found`` holds for a text in ``value``, its keys, or anything nested in it
    (iterative: nesting as deep as the parser accepts cannot exhaust the stack)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if found(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def has_nul(value: Any) -> bool:
    """True when a NUL character is in ``value``, its keys, or anything nested in it."""
    return _any_text(value, lambda text: "\x00" in text)


def has_lone_surrogate(value: Any) -> bool:
    """True when a text in ``value``, its keys, or anything nested in it holds a lone surrogate
    (a pair written as two escapes is decoded into one character and is not found)."""
    return _any_text(value, lambda text: SURROGATE.search(text) is not None)


def surrogate_path(value: Any) -> str | None:
    """The JSONPath (``$.items[1].response``) of the first text in ``value`` holding a lone surrogate, or None."""
    stack: list[tuple[str, Any]] = [("$", value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, str):
            if SURROGATE.search(item):
                return path
        elif isinstance(item, dict):
            for key, inner in reversed(list(item.items())):
                if SURROGATE.search(key):
                    return path
                stack.append((f"{path}.{key}", inner))
        elif isinstance(item, list):
            stack.extend((f"{path}[{n}]", inner) for n, inner in reversed(list(enumerate(item))))
    return None


def parse_constraints(cell: str) -> list[str]:
    """A cell listing texts: ``;``-separated, or a JSON list of texts. Raises ``ValueError``."""
    text = cell.strip()
    if text.startswith("["):
        try:
            value = json_loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"starts like a JSON list but is not valid JSON ({json_problem(exc)})") from None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError('must be a JSON list of texts, e.g. ["avoid tolls", "arrive before 8AM"]')
        if has_nul(value):
            raise ValueError("contains a NUL character")
        parts = value
    else:
        parts = text.split(";")
    return [p.strip() for p in parts if p.strip()]
