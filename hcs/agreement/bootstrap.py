"""Seeded, vectorised percentile bootstrap over items.

A bootstrap resample draws n items with replacement. Items with the same count
row are interchangeable, so the resample is fully described by how many times
each distinct row (pattern) was drawn, and those multiplicities follow a
Multinomial(n, pattern frequency / n) distribution. Drawing all resamples is one
``rng.multinomial`` call, and each statistic is a matrix product of the
resamples × patterns multiplicities with per-pattern features: no Python loop
over resamples. With 5 ratings on a 1–5 scale there are at most 126 patterns,
whatever the number of items.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 20240601


@dataclass(frozen=True)
class Resamples:
    """Distinct count rows and, per resample, how many times each was drawn."""

    patterns: npt.NDArray[np.int64]  # patterns × categories
    multiplicity: npt.NDArray[np.float64]  # resamples × patterns

    @classmethod
    def draw(cls, counts: npt.ArrayLike, *, n_resamples: int, seed: int) -> Resamples:
        table = np.asarray(counts, dtype=np.int64)
        patterns, frequency = unique_rows(table)
        rng = np.random.default_rng(seed)
        n = int(frequency.sum())
        if n == 0 or n_resamples <= 0:
            return cls(patterns, np.zeros((0, len(patterns))))
        multiplicity = rng.multinomial(n, frequency / n, size=n_resamples).astype(float)
        return cls(patterns, multiplicity)


def unique_rows(table: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Distinct rows of a non-negative integer matrix and how often each occurs.

    Same result as ``np.unique(table, axis=0, return_counts=True)``, but each row is first
    packed into one integer, which sorts an order of magnitude faster.
    """
    if table.size == 0:
        return np.unique(table, axis=0, return_counts=True)
    base = int(table.max()) + 1
    q = table.shape[1]
    if table.min() < 0 or q * np.log2(base) >= 62:
        return np.unique(table, axis=0, return_counts=True)
    place = base ** np.arange(q - 1, -1, -1, dtype=np.int64)
    keys, first, frequency = np.unique(table @ place, return_index=True, return_counts=True)
    return table[first], frequency


def percentile_interval(values: npt.ArrayLike, level: float = 0.95) -> tuple[float, float] | None:
    """The percentile interval of the finite bootstrap values; None if too few are finite.

    Resamples where the statistic is undefined (e.g. every rating in one category)
    are dropped; when more than half are undefined there is no honest interval.
    """
    arr = np.asarray(values, dtype=float)
    finite = arr[np.isfinite(arr)]
    if len(arr) == 0 or len(finite) < len(arr) / 2:
        return None
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(finite, [tail, 100 - tail])
    return float(lo), float(hi)
