"""The one rule for undefined results: a statistic that is NaN or infinite is reported as ``None``."""

from __future__ import annotations

import math
from typing import SupportsFloat


def finite_or_none(value: SupportsFloat | None) -> float | None:
    """``float(value)``, or ``None`` when ``value`` is ``None``, NaN or infinite.

    Statistics that are undefined for the data at hand (a correlation of a constant, a mean of
    nothing) come out of numpy as NaN; reports, JSON exports and pages show them as missing.

    >>> finite_or_none(0.25), finite_or_none(float("nan")), finite_or_none(None)
    (0.25, None, None)
    """
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None
