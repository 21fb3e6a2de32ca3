"""Prediction-powered ranking (Chatzi, Straitouri, Thejaswi & Gomez-Rodriguez, NeurIPS 2024).

The quantity ranked is each system's **win rate**: θ_m = E[credit of m | m is in the battle], a battle's
credit being 1 for a win, 0 for a loss and ``tie_credit`` for a tie or ``both_bad`` (the paper's reference
code counts a tie as 0 for both systems; ``tie_credit=0`` reproduces that, the default ½ matches the
leaderboard's "half a win"). The true ranking orders the θ_m of the human verdicts' distribution.

With ``n`` battles judged by people *and* the judge, and ``N`` further battles judged by the judge alone
(both drawn from the same distribution of pairs and prompts), the estimate is the prediction-powered mean
of Angelopoulos et al. (2023), per system and with the power-tuning λ of PPI++:

    θ̂ = λ · θ̃_N(judge) + θ̂_n(human − λ · judge)        (reference code ``estimate.estimate``)

the second term being the rectifier, the judge's error measured where people also judged. Its covariance
Σ̂ = λ² Σ̂_N + Σ̂_n is estimated from the residuals of each term; each win rate is a ratio (credits over
battles of m), so entry (m, m') divides the summed residual products by N_m·N_m' (the delta method), which
is what makes a diagonal entry the usual variance of a proportion. λ minimises tr Σ̂ and is clipped to
[0, 1] (the reference code's ``lhat_opt``; PPI++ [2]_, eq. 6 in one dimension).

The confidence ellipsoid is C = {θ : (θ − θ̂)ᵀ Σ̂⁻¹ (θ − θ̂) ≤ χ²_{k, 1−α}}, which holds the true θ with
probability → 1 − α. Two systems are *separated* when C lies on one side of the hyperplane θ_i = θ_j, that is
|θ̂_i − θ̂_j| > √(χ²_{k,1−α} · (Σ̂_ii + Σ̂_jj − 2 Σ̂_ij)) (the support function of C in the direction e_i − e_j).
System i's rank-set is [1 + #separated above it, k − #separated below it] (reference code
``ranksets.find_ranksets``). All rank-sets together cover the true ranking whenever θ ∈ C, so jointly
with probability ≥ 1 − α asymptotically. With λ = 0 the same construction on people alone gives the
human-only rank-sets printed beside them.

The paper's equation numbers are not cited: the full text was not at hand, and each step was checked against
the authors' reference code instead (names above), except the covariance's divisor, which follows the delta
method (docs/ranking-statistics.md says where the reference code differs).

References
----------
.. [1] I. Chatzi, E. Straitouri, S. Thejaswi and M. Gomez-Rodriguez, "Prediction-powered ranking of large
   language models", NeurIPS 2024 (arXiv:2402.17826); code: Networks-Learning/prediction-powered-ranking.
.. [2] A. N. Angelopoulos, J. C. Duchi and T. Zrnic, "PPI++: Efficient prediction-powered inference",
   arXiv:2311.01453, 2023.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import chi2

from hcs.ranking.battles import Battles, outcome_codes

__all__ = ["PPRanking", "judge_credit", "prediction_powered_ranking", "rank_sets"]


@dataclass(frozen=True)
class PPRanking:
    """Win rates, their covariance and the rank-sets, prediction-powered and from people alone."""

    theta: np.ndarray
    sigma: np.ndarray
    lam: float
    rank_low: np.ndarray
    rank_high: np.ndarray
    human_theta: np.ndarray
    human_sigma: np.ndarray
    human_rank_low: np.ndarray
    human_rank_high: np.ndarray
    n_human: int
    n_judge_only: int
    alpha: float

    def rank_set(self, system: int) -> tuple[int, int]:
        return int(self.rank_low[system]), int(self.rank_high[system])

    def to_json(self) -> list[dict]:
        """One entry per system: its win rate and ``rank_set``, and the same from people alone."""
        return [
            {
                "system": m,
                "win_rate": float(self.theta[m]),
                "rank_set": [int(self.rank_low[m]), int(self.rank_high[m])],
                "human_only": {
                    "win_rate": float(self.human_theta[m]),
                    "rank_set": [int(self.human_rank_low[m]), int(self.human_rank_high[m])],
                },
                "lambda": self.lam,
            }
            for m in range(len(self.theta))
        ]


def judge_credit(first, second=None, *, tie_credit: float = 0.5) -> np.ndarray:
    """The judge's credit to system ``a`` per battle, averaging its two verdicts (each order shown once).

    ``first`` and ``second`` hold the verdicts as ``a``/``b``/``tie``/``both_bad`` (or codes 0–3) *in the
    battle's own a/b labels*, already mapped back from screen positions.

    >>> judge_credit(["a", "a", "tie"], ["a", "b", "b"]).tolist()
    [1.0, 0.5, 0.25]
    """
    values = [
        np.choose(outcome_codes(x), [1.0, 0.0, tie_credit, tie_credit])
        for x in (first, second)
        if x is not None
    ]
    if len(values) == 2 and len(values[0]) != len(values[1]):
        raise ValueError(f"the two orders hold {len(values[0])} and {len(values[1])} verdicts")
    return np.mean(values, axis=0)


def _moments(a, b, x, k, xb=None):
    """Mean credit per system (k), battles per system, and the residuals of ``a``'s and ``b``'s credits.

    ``x`` is ``a``'s value per battle and ``xb`` ``b``'s (by default 1 − x, the other side of the credit)."""
    xb = 1 - x if xb is None else xb
    n_m = np.bincount(a, minlength=k) + np.bincount(b, minlength=k)
    total = np.bincount(a, weights=x, minlength=k) + np.bincount(b, weights=xb, minlength=k)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = total / n_m
    return rate, n_m, x - rate[a], xb - rate[b]


def _cross(a, b, r1, s1, r2, s2, n_m, k):
    """Σ_i of residual products (system m's residual in set 1 times m''s in set 2) over N_m N_m'."""
    flat = np.zeros(k * k)
    for i, ri, j, rj in ((a, r1, a, r2), (b, s1, b, s2), (a, r1, b, s2), (b, s1, a, r2)):
        flat += np.bincount(i * k + j, weights=ri * rj, minlength=k * k)
    return flat.reshape(k, k) / np.outer(n_m, n_m)


def rank_sets(theta, sigma, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Rank-sets [low, high] (rank 1 is the highest θ) from the ellipsoid of level 1 − α (module docstring).

    >>> low, high = rank_sets([0.7, 0.5, 0.3], np.diag([1e-4, 1e-4, 1e-4]))
    >>> low.tolist(), high.tolist()
    ([1, 2, 3], [1, 2, 3])
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), not {alpha}")
    theta, sigma = np.asarray(theta, float), np.asarray(sigma, float)
    k = len(theta)
    var_diff = np.diag(sigma)[:, None] + np.diag(sigma)[None, :] - 2 * sigma
    gap = np.abs(theta[:, None] - theta[None, :])
    separated = gap > np.sqrt(chi2.ppf(1 - alpha, k) * np.maximum(var_diff, 0))
    np.fill_diagonal(separated, False)
    above = (separated & (theta[None, :] > theta[:, None])).sum(1)
    below = (separated & (theta[None, :] < theta[:, None])).sum(1)
    return 1 + above, k - below


def prediction_powered_ranking(
    human: Battles,
    judge_on_human,
    judge_only: Battles | None = None,
    judge_only_credit=None,
    *,
    alpha: float = 0.05,
    tie_credit: float = 0.5,
    lam: float | None = None,
) -> PPRanking:
    """Prediction-powered and human-only rank-sets at level 1 − α (see the module docstring).

    Parameters
    ----------
    human : Battles
        The battles people judged (their verdicts are ``human.outcome``).
    judge_on_human : array_like
        The judge's credit to ``a`` on the same battles (:func:`judge_credit`), in [0, 1].
    judge_only, judge_only_credit : Battles and array_like
        Battles only the judge judged, and its credit to ``a`` on each.
    lam : float, optional
        A fixed λ in [0, 1]; by default λ is tuned as in PPI++.
    """
    k = human.n_systems
    yhat = np.asarray(judge_on_human, float)
    if len(yhat) != len(human):
        raise ValueError(f"{len(human)} human battles but {len(yhat)} judge credits on them")
    if judge_only is None:
        judge_only, judge_only_credit = human.subset(np.zeros(len(human), bool)), np.zeros(0)
    xu = np.asarray(judge_only_credit, float)
    if len(xu) != len(judge_only) or judge_only.n_systems != k:
        raise ValueError(
            "judge_only_credit must give one credit per judge-only battle, over the same systems"
        )
    for name, x in (("judge_on_human", yhat), ("judge_only_credit", xu)):
        if len(x) and not ((x >= 0) & (x <= 1)).all():
            raise ValueError(f"{name} must lie in [0, 1]")
    y = human.credit_a(tie_credit)
    a, b = human.a, human.b
    h_rate, n_m, hr, hs = _moments(a, b, y, k)
    if (n_m < 2).any():
        raise ValueError(f"system {int(np.flatnonzero(n_m < 2)[0])} has fewer than 2 human battles")
    h_sigma = _cross(a, b, hr, hs, hr, hs, n_m, k)
    j_rate, jn_m, jr, js = _moments(a, b, yhat, k)
    u_rate, un_m, ur, us = _moments(judge_only.a, judge_only.b, xu, k)
    have_unlabelled = bool((un_m > 0).all())
    sigma_u = _cross(judge_only.a, judge_only.b, ur, us, ur, us, un_m, k) if have_unlabelled else None
    if lam is None:
        lam = 0.0
        if have_unlabelled:
            c = np.trace(_cross(a, b, hr, hs, jr, js, n_m, k))
            v = np.trace(sigma_u) + np.trace(_cross(a, b, jr, js, jr, js, n_m, k))
            lam = float(np.clip(c / v, 0.0, 1.0)) if v > 0 else 0.0
    elif not 0 <= lam <= 1 or (lam > 0 and not have_unlabelled):
        raise ValueError("lam must lie in [0, 1], and be 0 unless every system has judge-only battles")
    # The rectifier per side: b's value is its own credit minus λ times the judge's credit to b.
    r_rate, _, rr, rs = _moments(a, b, y - lam * yhat, k, (1 - y) - lam * (1 - yhat))
    theta = r_rate + (lam * u_rate if lam > 0 else 0.0)
    sigma = _cross(a, b, rr, rs, rr, rs, n_m, k) + (lam**2 * sigma_u if lam > 0 else 0.0)
    low, high = rank_sets(theta, sigma, alpha)
    h_low, h_high = rank_sets(h_rate, h_sigma, alpha)
    return PPRanking(
        theta,
        sigma,
        float(lam),
        low,
        high,
        h_rate,
        h_sigma,
        h_low,
        h_high,
        len(human),
        len(judge_only),
        alpha,
    )
