"""Typed readers for settings given in the environment: a value is one of the documented forms or
start-up stops.

A typo such as ``HTTPS_ONLY=O`` must not quietly switch a protection off, so every boolean and
whole-number setting accepts only the values listed here and anything else raises
``ImproperlyConfigured`` naming the variable, what it got and what it accepts. An unset or blank
variable takes the default. The README's Configuration table lists the same values.
"""

from __future__ import annotations

import json
import os
import re

from django.core.exceptions import ImproperlyConfigured

TRUE = ("1", "true", "yes", "on")
FALSE = ("0", "false", "no", "off")
BOOL_ACCEPTED = "1/0, true/false, yes/no or on/off (any case)"


def _raw(name: str) -> str | None:
    value = os.environ.get(name)
    if value is None or not value.strip():
        return None
    return value.strip()


def env_bool(name: str, default: bool = False) -> bool:
    """``name`` as a boolean: one of :data:`TRUE` or :data:`FALSE`, any case; unset or blank is ``default``."""
    value = _raw(name)
    if value is None:
        return default
    if value.lower() in TRUE:
        return True
    if value.lower() in FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean; accepted values: {BOOL_ACCEPTED}.")


def env_int(name: str, default: int, *, minimum: int = 0) -> int:
    """``name`` as a whole number (decimal digits, optional sign) of at least ``minimum``."""
    value = _raw(name)
    if value is None:
        return default
    digits = value[1:] if value[:1] in "+-" else value
    if not (digits.isascii() and digits.isdigit()):
        raise ImproperlyConfigured(
            f"{name}={value!r} is not a whole number; accepted values: whole numbers from {minimum} up."
        )
    number = int(value)
    if number < minimum:
        raise ImproperlyConfigured(
            f"{name}={value!r} is below {minimum}; accepted values: whole numbers from {minimum} up."
        )
    return number


def env_list(name: str, default: str = "") -> list[str]:
    """``name`` as a comma-separated list; blank entries are dropped."""
    return [part.strip() for part in os.environ.get(name, default).split(",") if part.strip()]


RATE_UNITS = ("s", "sec", "m", "min", "h", "hour", "d", "day")
_UNIT_SECONDS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "hour": 3600, "d": 86400, "day": 86400}


def rate_parts(rate: str) -> tuple[int, int]:
    """A rate :func:`env_rate` accepted, as (requests, period in seconds): ``"120/min"`` is (120, 60)."""
    count, unit = rate.split("/")
    return int(count), _UNIT_SECONDS[unit]


def env_rate(name: str, default: str) -> str:
    """``name`` as a request rate ``N/unit`` (N ≥ 1; unit one of :data:`RATE_UNITS`), e.g. ``120/min``."""
    value = _raw(name)
    if value is None:
        return default
    match = re.fullmatch(r"(\d+)/([a-z]+)", value)
    if not match or int(match.group(1)) < 1 or match.group(2) not in RATE_UNITS:
        raise ImproperlyConfigured(
            f"{name}={value!r} is not a rate; accepted values: N/unit with N a whole number from 1 up and unit "
            f"one of {', '.join(RATE_UNITS)} (e.g. 120/min)."
        )
    return value


def env_json_object(name: str) -> dict:
    """``name`` as a JSON object (e.g. a storage backend's options); unset or blank is ``{}``."""
    value = _raw(name)
    if value is None:
        return {}
    try:
        data = json.loads(value)
    except json.JSONDecodeError as exc:
        raise ImproperlyConfigured(
            f'{name} must be a JSON object, like {{"bucket_name": "x"}}: {exc}'
        ) from None
    if not isinstance(data, dict):
        raise ImproperlyConfigured(
            f'{name} must be a JSON object, like {{"bucket_name": "x"}}, not {value!r}.'
        )
    return data


def env_url(name: str, default: str) -> str:
    """``name`` as an ``http://`` or ``https://`` URL without a trailing slash; unset or blank is ``default``."""
    value = _raw(name)
    if value is None:
        return default
    if not re.fullmatch(r"https?://[^\s/?#]+(/[^\s?#]*)?", value):
        raise ImproperlyConfigured(
            f"{name}={value!r} is not a URL; accepted values: http:// or https:// followed by a host (and a path)."
        )
    return value.rstrip("/")


def env_secret(name: str) -> str:
    """``name`` as a secret string (surrounding blanks dropped); unset is empty. Never put in a message."""
    return _raw(name) or ""
