"""Confidence sequences for the mean of [0, 1]-bounded observations by betting.

The hedged-capital confidence sequence of Waudby-Smith and Ramdas (2023), theorem 3, with the
predictable plug-in empirical-Bernstein bets of their eq. (26), as the ``confseq`` package computes it
(``confseq.betting.betting_cs`` with its defaults: θ = 1/2, bets truncated at 1/2 · 1/m and
1/2 · 1/(1 − m), a grid of 1000 breaks widened by one break). For each candidate mean m the two capital
processes

    K⁺_t(m) = Π_{i ≤ t} (1 + λ⁺_i(m) (x_i − m)),     K⁻_t(m) = Π_{i ≤ t} (1 − λ⁻_i(m) (x_i − m))

are nonnegative martingales when the mean is m, so by Ville's inequality the hedged capital
max(θ K⁺, (1 − θ) K⁻) exceeds 1/α with probability at most α at any time: the m whose capital stays
below 1/α form a (1 − α) confidence sequence, valid uniformly over t.

References
----------
.. [1] I. Waudby-Smith and A. Ramdas, "Estimating means of bounded random variables by betting",
   *Journal of the Royal Statistical Society Series B* 86(1):1–27, 2024 (arXiv:2010.09686).
.. [2] J. Ville, *Étude critique de la notion de collectif*, Gauthier-Villars, 1939.
"""

from __future__ import annotations

import numpy as np

TRUNCATION = 0.5  # bets at most half the capital can lose: confseq's default trunc_scale
BREAKS = 1000


def predictable_bets(x, alpha: float, *, fixed_n: int | None = None) -> np.ndarray:
    """The predictable plug-in bets λ_t of [1]_ (eq. 26): √(2 log(1/α) / (σ̂²_{t−1} t log(1 + t))).

    σ̂²_{t−1} is the regularised variance of the first t − 1 observations (one fake observation of mean
    1/2 and variance 1/4); with ``fixed_n`` the bets are tuned for an interval at that sample size,
    √(2 log(1/α) / (n σ̂²_{t−1})). ``confseq.betting_strategies.lambda_predmix_eb`` with no truncation.

    >>> np.round(predictable_bets([0.5, 0.5, 0.5], 0.05), 4).tolist()
    [5.8801, 4.6706, 4.1578]
    """
    x = np.asarray(x, dtype=float)
    t = np.arange(1, len(x) + 1)
    mu = np.minimum((0.5 + np.cumsum(x)) / (t + 1), 1)
    sigma2 = (0.25 + np.cumsum((x - mu) ** 2)) / (t + 1)
    sigma2_prev = np.append(0.25, sigma2[:-1])
    scale = t * np.log(1 + t) if fixed_n is None else float(fixed_n)
    return np.sqrt(2 * np.log(1 / alpha) / (scale * sigma2_prev))


def _log_capital(x: np.ndarray, m: np.ndarray, bets: np.ndarray, sign: int) -> np.ndarray:
    """log K_t(m) for every candidate m (rows) and time t (columns); sign +1 bets on a mean above m."""
    m = m[:, None]
    with np.errstate(divide="ignore"):
        limit = TRUNCATION / (m if sign > 0 else 1 - m)
        lam = np.minimum(bets[None, :], limit)
        factor = 1 + sign * lam * (x[None, :] - m)
        return np.cumsum(np.log(np.maximum(factor, 0.0)), axis=1)


def betting_cs(
    x, alpha: float = 0.05, *, theta: float = 0.5, breaks: int = BREAKS, running_intersection=False
):
    """Hedged-capital confidence sequence for the mean of observations in [0, 1] ([1]_, theorem 3).

    Parameters
    ----------
    x : array_like
        Observations in [0, 1], in the order they arrived.
    alpha : float
        P(the mean ever leaves the sequence) ≤ ``alpha``.
    theta : float
        Weight of the upward capital process: 1 gives a lower confidence sequence only, 0 an upper one.
    breaks : int
        The candidate means are 0, 1/breaks, …, 1.
    running_intersection : bool
        Intersect each interval with the earlier ones (still valid: the sequence covers at all times).

    Returns
    -------
    tuple of numpy.ndarray
        Lower and upper bounds after each observation.

    References
    ----------
    Waudby-Smith and Ramdas (2024) [1]_, theorem 3 and eq. (26); ``confseq.betting.betting_cs``.

    Examples
    --------
    The interval ``confseq.betting.betting_cs`` (version 0.0.11, defaults) gives on the same data:

    >>> lo, hi = betting_cs([0.2, 0.9, 0.4, 0.6, 0.7, 0.3, 0.5, 0.8, 0.5, 0.4] * 5)
    >>> round(float(lo[-1]), 3), round(float(hi[-1]), 3)
    (0.437, 0.621)
    """
    x = np.asarray(x, dtype=float)
    if x.size and (x.min() < 0 or x.max() > 1):
        raise ValueError("observations must lie in [0, 1]")
    if not 0 <= theta <= 1:
        raise ValueError(f"theta must lie in [0, 1], not {theta}")
    m = np.arange(0, 1 + 1 / breaks, 1 / breaks)
    capital = np.full((len(m), len(x)), -np.inf)
    if theta > 0:
        up = _log_capital(x, m, predictable_bets(x, alpha * theta), +1)
        capital = np.maximum(capital, np.log(theta) + up)
    if theta < 1:
        down = _log_capital(x, m, predictable_bets(x, alpha * (1 - theta)), -1)
        capital = np.maximum(capital, np.log(1 - theta) + down)
    inside = capital <= np.log(1 / alpha)
    any_inside = inside.any(axis=0)
    first = np.where(any_inside, inside.argmax(axis=0), 0)
    last = np.where(any_inside, len(m) - 1 - inside[::-1].argmax(axis=0), len(m) - 1)
    lo = np.maximum(0.0, m[first] - 1 / breaks)
    hi = np.minimum(1.0, m[last] + 1 / breaks)
    if running_intersection:
        lo, hi = np.maximum.accumulate(lo), np.minimum.accumulate(hi)
    return lo, hi


def lower_bound(x, alpha: float, *, tol: float = 1e-6) -> float:
    """A (1 − α) lower confidence bound for the mean of ``x`` in [0, 1] from the upward capital process.

    The bets are tuned for this sample size ([1]_, the fixed-n choice of eq. 26) and the bound is the
    smallest m whose capital K⁺_n(m) stays below 1/α, found by bisection: K⁺_n(m) falls as m rises (every
    factor does, truncation included), so the set of m not rejected is an interval (bound, 1].

    >>> round(lower_bound([0.9] * 100, 0.05), 4)
    0.8483
    """
    x = np.asarray(x, dtype=float)
    if not len(x):
        return 0.0
    bets = predictable_bets(x, alpha, fixed_n=len(x))
    threshold = np.log(1 / alpha)

    def rejected(m: float) -> bool:
        return _log_capital(x, np.array([m]), bets, +1)[0, -1] > threshold

    lo, hi = 0.0, 1.0
    if not rejected(lo):
        return 0.0
    while hi - lo > tol:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if rejected(mid) else (lo, mid)
    return hi


def upper_bound(x, alpha: float, *, tol: float = 1e-6) -> float:
    """A (1 − α) upper confidence bound for the mean of ``x`` in [0, 1] (:func:`lower_bound` of 1 − x).

    >>> round(upper_bound([0.1] * 100, 0.05), 4)
    0.1517
    """
    return 1.0 - lower_bound(1.0 - np.asarray(x, dtype=float), alpha, tol=tol)
