"""A study planner: from a pilot batch, predict the precision of N items × k annotators.

Agreement (Fleiss' κ, Krippendorff's α ordinal and interval, Gwet's AC2) and the overall HCS mean are
predicted by simulation from the pilot: draw items with replacement, give each k of its own ratings
(without replacement when it has k, otherwise with), and compute the same statistics and percentile
bootstrap intervals the report computes (:func:`hcs.agreement.dimension_agreement`). A simulated study
is at most ``max_sim_items`` items; a larger N is scaled by √(simulated / N), the rate of every
interval here. The items a target width needs follow from the same rate.

For a judge: the human labels PPI++ needs for an interval of a given width (the pilot's variances in
the closed-form width, [2]_), and the items the alt-test needs to pass with power 0.8 at margin ε
(the alt-test run on resampled pilots, [3]_).

References
----------
.. [1] B. Efron and R. J. Tibshirani, *An Introduction to the Bootstrap*, Chapman & Hall, 1993.
.. [2] A. N. Angelopoulos, J. C. Duchi and T. Zrnic, "PPI++: Efficient prediction-powered inference",
   arXiv:2311.01453, 2023.
.. [3] N. Calderon, R. Reichart and R. Dror, "The alternative annotator test for LLM-as-a-judge",
   arXiv:2501.10970, 2025.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from hcs.agreement import dimension_agreement
from hcs.calibration.alt_test import alt_test
from hcs.ppi import ppi_lambda

__all__ = [
    "AGREEMENT_STATISTICS",
    "StatisticPlan",
    "alt_test_items_for_power",
    "items_for_width",
    "plan_agreement",
    "plan_mean",
    "ppi_labels_for_width",
    "simulate_ratings",
]

Z95 = 1.959963984540054
# Plan key → the DimensionAgreement attribute holding its interval.
AGREEMENT_STATISTICS = {
    "fleiss_kappa": "fleiss_kappa_ci95",
    "krippendorff_alpha_ordinal": "alpha_ordinal_ci95",
    "krippendorff_alpha_interval": "alpha_interval_ci95",
    "gwet_ac2": "gwet_ac2_ci95",
}


@dataclass(frozen=True)
class StatisticPlan:
    predicted_ci95_width: float | None
    items_for_target: int | None

    def to_json(self) -> dict:
        return {"predicted_ci95_width": self.predicted_ci95_width, "items_for_target": self.items_for_target}


def items_for_width(n_items: int, width: float | None, target: float | None) -> int | None:
    """Items for an interval of width ``target``, from ``width`` at ``n_items`` and the 1/√n rate.

    >>> items_for_width(100, 0.2, 0.1)
    400
    """
    if width is None or target is None or not (width > 0 and target > 0):
        return None
    return max(2, math.ceil(n_items * (width / target) ** 2 - 1e-9))


def simulate_ratings(ratings, n_items: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """A simulated study: ``n_items`` pilot items drawn with replacement, ``k`` ratings each.

    ``ratings``: pilot items × raters (NaN: not rated). Each drawn item gets k of its own ratings,
    without replacement when it has at least k, with replacement otherwise. Returns n_items × k.
    """
    r = np.asarray(ratings, dtype=float)
    usable = np.flatnonzero(np.isfinite(r).sum(axis=1) >= 2)
    if not len(usable):
        raise ValueError("the pilot needs items rated at least twice")
    sub = r[rng.choice(usable, size=n_items)]
    # Each drawn item's valid ratings first, in a random order of its own: the first k are a draw without replacement.
    keys = np.where(np.isfinite(sub), rng.random(sub.shape), np.inf)
    shuffled = np.take_along_axis(sub, np.argsort(keys, axis=1), axis=1)
    have = np.isfinite(sub).sum(axis=1)
    again = np.floor(rng.random((n_items, k)) * have[:, None]).astype(int)
    idx = np.where(have[:, None] >= k, np.arange(k)[None, :], again)
    out = np.take_along_axis(shuffled, idx, axis=1)
    return out


def _counts(values: np.ndarray, categories: Sequence[int]) -> np.ndarray:
    index = {c: n for n, c in enumerate(categories)}
    table = np.zeros((len(values), len(categories)), dtype=np.int64)
    for j in range(values.shape[1]):
        col = np.array([index[int(v)] for v in values[:, j]])
        np.add.at(table, (np.arange(len(values)), col), 1)
    return table


def plan_agreement(
    ratings,
    categories: Sequence[int],
    *,
    n_items: int,
    k: int,
    target_width: float | None = None,
    n_sims: int = 5,
    n_resamples: int = 1000,
    max_sim_items: int = 2000,
    seed: int = 0,
) -> dict[str, StatisticPlan]:
    """Predicted 95 % interval widths of κ, α (ordinal, interval) and AC2 for ``n_items`` × ``k``.

    Parameters
    ----------
    ratings : array_like, shape (pilot items, raters)
        The pilot's scores on one dimension (values in ``categories``; NaN: not rated).
    categories : sequence of int
    n_items, k : int
        The planned study.
    target_width : float, optional
        With it, each statistic's ``items_for_target``.
    n_sims : int
        Simulated studies averaged.
    n_resamples : int
        Bootstrap resamples per simulated study.
    """
    if n_items < 2 or k < 2:
        raise ValueError("a plan needs at least 2 items and 2 annotators per item")
    rng = np.random.default_rng(seed)
    m = min(n_items, max_sim_items)
    widths: dict[str, list[float]] = {key: [] for key in AGREEMENT_STATISTICS}
    for s in range(n_sims):
        table = _counts(simulate_ratings(ratings, m, k, rng), categories)
        result = dimension_agreement(
            table, table, list(categories), k=k, n_resamples=n_resamples, seed=seed + s
        )
        for key, attr in AGREEMENT_STATISTICS.items():
            ci = getattr(result, attr)
            if ci is not None and all(v is not None and math.isfinite(v) for v in ci):
                widths[key].append(ci[1] - ci[0])
    out = {}
    for key, values in widths.items():
        width = float(np.mean(values) * math.sqrt(m / n_items)) if values else None
        out[key] = StatisticPlan(width, items_for_width(n_items, width, target_width))
    return out


def plan_mean(
    values,
    *,
    n_items: int,
    k: int,
    target_width: float | None = None,
    n_sims: int = 20,
    max_sim_items: int = 2000,
    seed: int = 0,
) -> StatisticPlan:
    """Predicted 95 % interval width of the mean over items of each item's mean of ``k`` values (the overall
    HCS mean): simulated item means, then the normal width 2·z·SD/√N.

    >>> rng = np.random.default_rng(0)
    >>> pilot = rng.normal(3, 1, size=(200, 1)) + rng.normal(0, 0.5, size=(200, 3))
    >>> round(plan_mean(pilot, n_items=400, k=3).predicted_ci95_width, 2)  # 2·1.96·√(1 + 0.25/3)/√400 = 0.204
    0.2
    """
    rng = np.random.default_rng(seed)
    m = min(n_items, max_sim_items)
    sds = [simulate_ratings(values, m, k, rng).mean(axis=1).std(ddof=1) for _ in range(n_sims)]
    width = float(2 * Z95 * np.mean(sds) / math.sqrt(n_items))
    return StatisticPlan(width, items_for_width(n_items, width, target_width))


def ppi_labels_for_width(y, yhat, yhat_unlabelled, *, n_items: int, width: float) -> int | None:
    """Human labels among ``n_items`` (judge on all) for a PPI++ interval of ``width``; None if even
    labelling every item is not enough.

    Uses the pilot's λ and variances in the PPI++ standard error,
    ``2 z sqrt(Var(Y − λ f) / n + λ² Var(f) / (N − n))``, smallest n meeting the width.
    """
    y, f, fu = (np.asarray(a, dtype=float) for a in (y, yhat, yhat_unlabelled))
    if len(y) < 2 or width <= 0:
        return None
    lam = float(ppi_lambda(y, f, fu)) if len(fu) else 0.0
    var_rect = float((y - lam * f).var())
    var_f = float(np.concatenate([f, fu]).var())
    n = np.arange(2, n_items + 1, dtype=float)
    unlabelled = np.maximum(n_items - n, 1)
    widths = 2 * Z95 * np.sqrt(var_rect / n + np.where(n < n_items, lam**2 * var_f / unlabelled, 0.0))
    ok = np.flatnonzero(widths <= width)
    return int(n[ok[0]]) if len(ok) else None


ALT_TEST_SIZES = (30, 50, 75, 100, 150, 200, 300, 500, 750, 1000)  # the item counts the alt-test plan tries


def alt_test_items_for_power(
    human: Mapping[Hashable, Mapping[Hashable, float]],
    judge: Mapping[Hashable, float],
    *,
    epsilon: float,
    power: float = 0.8,
    grid: Sequence[int] = ALT_TEST_SIZES,
    n_sims: int = 40,
    seed: int = 0,
) -> int | None:
    """Items (each rated by the pilot's annotators) for the alt-test to pass with probability ``power``.

    Each candidate size resamples the pilot's items with replacement and runs :func:`alt_test`; the first
    size on ``grid`` whose pass rate reaches ``power`` is returned, None when none does.
    """
    items = [i for i in judge if i in human and len(human[i]) >= 2]
    if len(items) < 2:
        return None
    rng = np.random.default_rng(seed)
    for n in grid:
        passed = 0
        for _ in range(n_sims):
            draw = rng.integers(0, len(items), size=n)
            h = {j: human[items[d]] for j, d in enumerate(draw)}
            f = {j: judge[items[d]] for j, d in enumerate(draw)}
            passed += bool(alt_test(h, f, epsilon=epsilon).outcome)
        if passed / n_sims >= power:
            return int(n)
    return None
