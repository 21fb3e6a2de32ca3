"""Seeded, vectorised percentile bootstrap over items.

A bootstrap resample draws n items with replacement. Items with the same count
row are interchangeable, so the resample is fully described by how many times
each distinct row (pattern) was drawn, and those multiplicities follow a
Multinomial(n, pattern frequency / n) distribution. Drawing all resamples is one
``rng.multinomial`` call, and each statistic is a matrix product of the
resamples × patterns multiplicities with per-pattern features: no Python loop
over resamples. With 5 ratings on a 1–5 scale there are at most 126 patterns,
whatever the number of items.

Seed rule: every bootstrap in ``hcs`` takes an explicit integer ``seed`` and draws from
``numpy.random.default_rng(seed)``, so the same data and seed give the same interval on every machine.
The default is :data:`DEFAULT_SEED`. A report (``annotator.reports.selectors.batch_report.batch_report``) passes
its one seed on: dimension ``j`` of the rubric (0-based, rubric order) uses ``seed + j``, so the
dimensions' intervals are not drawn from one stream; the system ranking and the judge calibrations use
``seed`` itself. ``export_report --seed`` changes it; the JSON export records it.

Percentile rule (:func:`percentile_interval`, the only one): the 2.5th and 97.5th percentiles (for a
95 % interval) of the resamples where the statistic is defined; no interval when more than half of
the resamples are undefined.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from hcs.defaults import DEFAULT_RESAMPLES, DEFAULT_SEED  # noqa: F401 (re-exported)


@dataclass(frozen=True)
class Resamples:
    """Distinct count rows and, per resample, how many times each was drawn.

    ``Resamples.draw(counts, n_resamples=…, seed=…)`` resamples items with replacement (Efron and
    Tibshirani 1993) as multinomial multiplicities of the distinct rows.
    """

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
    _keys, first, frequency = np.unique(table @ place, return_index=True, return_counts=True)
    return table[first], frequency


def percentile_interval(values: npt.ArrayLike, level: float = 0.95) -> tuple[float, float] | None:
    """The percentile interval of the finite bootstrap values; None if too few are finite.

    Resamples where the statistic is undefined (e.g. every rating in one category)
    are dropped; when more than half are undefined there is no honest interval. This is the
    one percentile rule of ``hcs``.

    Parameters
    ----------
    values : array_like
        The statistic on each resample, NaN where undefined.
    level : float
        Coverage; 0.95 gives the 2.5th and 97.5th percentiles.

    Returns
    -------
    tuple of float, or None

    References
    ----------
    Efron, B. and Tibshirani, R. J. (1993). *An Introduction to the Bootstrap*. Chapman & Hall,
    ch. 13 (the percentile interval).
    """
    arr = np.asarray(values, dtype=float)
    finite = arr[np.isfinite(arr)]
    if len(arr) == 0 or len(finite) < len(arr) / 2:
        return None
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(finite, [tail, 100 - tail])
    return float(lo), float(hi)
