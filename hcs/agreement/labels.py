"""Interpretation labels for chance-corrected agreement coefficients.

Landis, J. R. & Koch, G. G. (1977). The measurement of observer agreement for
categorical data. *Biometrics* 33(1), 159–174, Table on p. 165.

>>> landis_koch(0.4302445)
'moderate'
>>> landis_koch(-0.1), landis_koch(0.0), landis_koch(0.81), landis_koch(None)
('poor', 'slight', 'almost perfect', '')
"""

from __future__ import annotations

import math

# Upper bounds (inclusive) of each band, after Landis & Koch (1977).
LANDIS_KOCH_BANDS: tuple[tuple[float, str], ...] = (
    (0.20, "slight"),
    (0.40, "fair"),
    (0.60, "moderate"),
    (0.80, "substantial"),
    (1.00, "almost perfect"),
)


def landis_koch(value: float | None) -> str:
    """The Landis & Koch band of a κ-like coefficient; '' when it is undefined."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if value < 0:
        return "poor"
    for upper, label in LANDIS_KOCH_BANDS:
        if value <= upper + 1e-12:
            return label
    return "almost perfect"
