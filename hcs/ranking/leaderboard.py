"""A Bradley–Terry leaderboard with 95 % intervals and rank intervals from a bootstrap over prompts.

Why prompts. Battles on the same prompt share its difficulty and its quirks, so they are not independent;
the prompts are (approximately) a random sample of the prompts the systems will meet. Resampling prompts
with replacement keeps each prompt's battles together, as a cluster bootstrap does (Davison & Hinkley 1997,
ch. 3, hierarchical data), and its intervals answer "how different would the board be on other prompts like
these".

How. Each replicate draws multinomial weights over the prompts (how many times each prompt is drawn) and
multiplies them into the per-prompt count table (:func:`hcs.ranking.battles.prompt_counts`): the replicate's
counts are one sparse product, never a copy of the rows. All replicates are then fitted together by Newton's
method started from the full data's estimate.

Intervals. ``ci_low``/``ci_high`` are the percentile interval of the replicates' scores (Efron & Tibshirani
1993, ch. 13). It can miss the point estimate when the bootstrap distribution is skewed; then the interval is
stretched to the estimate and ``ci_extended`` says so, rather than printing a bar that excludes its own point.
``rank_low``/``rank_high`` are the same percentiles of each system's rank among the replicates: marginal
95 % intervals, one system at a time (the prediction-powered rank-sets of :mod:`hcs.ranking.ppr` are joint).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.stats import chi2

from hcs.ranking.battles import Battles, PromptCounts, prompt_counts
from hcs.ranking.bt import _terms, fit_counts, standing

__all__ = ["Leaderboard", "SystemScore", "leaderboard"]


@dataclass(frozen=True)
class SystemScore:
    """One system's row of the leaderboard (``score`` ±inf and ``rank`` None where the MLE does not exist)."""

    system: int
    score: float
    ci_low: float | None
    ci_high: float | None
    rank: int | None
    rank_low: int
    rank_high: int
    n_battles: int
    wins: int
    losses: int
    ties: int
    standing: str  # "fitted", "above" (+inf: no loss to the fitted group), "below" (−inf) or "apart"
    ci_extended: bool = False

    def to_json(self) -> dict:
        """The row with full precision; an infinite or missing end is null (JSON has no infinity): ``standing``
        says which side is open."""

        def num(x):
            return float(x) if x is not None and np.isfinite(x) else None

        return {
            "system": self.system,
            "score": num(self.score),
            "ci_low": num(self.ci_low),
            "ci_high": num(self.ci_high),
            "rank": self.rank,
            "rank_low": self.rank_low,
            "rank_high": self.rank_high,
            "n_battles": self.n_battles,
            "wins": self.wins,
            "losses": self.losses,
            "ties": self.ties,
            "standing": self.standing,
            "ci_extended": bool(self.ci_extended),
        }


@dataclass(frozen=True)
class Leaderboard:
    """Rows in system order, with the bootstrap's bookkeeping."""

    rows: tuple[SystemScore, ...]
    ties: str
    log_nu: float | None
    n_boot: int
    n_prompts: int
    degenerate_replicates: int  # replicates whose fitted group was no longer strongly connected
    alpha: float

    def scores(self) -> np.ndarray:
        return np.array([r.score for r in self.rows])


def _record(bt: Battles) -> np.ndarray:
    """Wins, losses and ties (``both_bad`` included) per system."""
    out = np.zeros((bt.n_systems, 3), dtype=int)
    for side, win in ((bt.a, 0), (bt.b, 1)):
        np.add.at(out[:, 0], side[bt.outcome == win], 1)
        np.add.at(out[:, 1], side[bt.outcome == 1 - win], 1)
        np.add.at(out[:, 2], side[bt.outcome >= 2], 1)
    return out


def _sub(pc: PromptCounts, mask: np.ndarray):
    """Columns and re-indexed pairs of the counts among the systems in ``mask``."""
    keep = mask[pc.pairs].all(1)
    index = np.cumsum(mask) - 1
    cols = (np.flatnonzero(keep)[:, None] * 3 + np.arange(3)).ravel()
    return cols, index[pc.pairs[keep]]


def _bound(direct, scores, log_nu, ties, sign, alpha):
    """One-sided likelihood-ratio bound for a system that won (sign +1) or lost (−1) every battle.

    With the fitted group's scores held at their estimates, its log-likelihood rises (falls) monotonically to
    0 as its score goes to +∞ (−∞); the bound is where it sits χ²₁(1 − α)/2 below that supremum.
    """
    if not direct:
        return None
    opp = np.array([j for j, _ in direct])
    counts = np.array([[n, 0.0, 0.0] for _, n in direct])
    phi = None if log_nu is None else np.array([log_nu])
    target = -chi2.ppf(1 - alpha, 1) / 2

    def gap(x):
        return float(_terms(sign * (x - scores[opp])[None], phi, counts[None], ties)[0][0]) - target

    lo, hi = (scores[opp].min() - 50, scores[opp].max() + 50)
    return float(brentq(gap, lo, hi)) if gap(lo) * gap(hi) < 0 else None


def _replicates(pc, cols, sub_pairs, m, est, ties, n_boot, seed):
    """Bootstrap scores (n_boot × m) of the fitted group; ±inf/NaN in replicates where it falls apart."""
    rng = np.random.default_rng(seed)
    table = pc.table[:, cols].tocsr()
    full_edges = _edges(np.asarray(table.sum(0)).reshape(-1, 3))
    out, degenerate, chunk = np.empty((n_boot, m)), 0, max(1, min(n_boot, 2_000_000 // max(pc.n_prompts, 1)))
    for start in range(0, n_boot, chunk):
        size = min(chunk, n_boot - start)
        draws = rng.integers(0, pc.n_prompts, size=(size, pc.n_prompts))
        weights = np.stack([np.bincount(d, minlength=pc.n_prompts) for d in draws]).astype(float)
        counts = np.asarray((table.T @ weights.T).T).reshape(size, -1, 3)
        fit = fit_counts(counts, sub_pairs, m, ties=ties, init=est)
        out[start : start + size] = fit.scores
        changed = np.flatnonzero((_edges(counts) != full_edges).any((1, 2)) | ~fit.converged)
        for r in changed:
            mask, how = standing(counts[r], sub_pairs, m)
            if mask.all():
                continue
            degenerate += 1
            out[start + r] = _degenerate(counts[r], sub_pairs, m, mask, how, est, ties)
    return out, degenerate


def _edges(counts):
    return np.stack([counts[..., 0] + counts[..., 2] > 0, counts[..., 1] + counts[..., 2] > 0], -1)


def _degenerate(counts, pairs, m, mask, how, est, ties):
    """Scores of a replicate that is not strongly connected: its own largest group is fitted and shifted to
    the full estimate's mean over the same systems; the rest are ±inf (or NaN when apart)."""
    row = np.array([{"above": np.inf, "below": -np.inf}.get(h, np.nan) for h in how])
    if mask.sum() >= 2:
        keep = mask[pairs].all(1)
        index = np.cumsum(mask) - 1
        init = (est[0][mask], est[1])
        fit = fit_counts(counts[keep], index[pairs[keep]], int(mask.sum()), ties=ties, init=init)
        row[mask] = fit.scores[0] + est[0][mask].mean()
    elif mask.sum() == 1:
        row[mask] = est[0][mask]
    return row


def _percentile(x, q):
    x = x[~np.isnan(x)]
    return float(np.quantile(x, q, method="inverted_cdf")) if len(x) else None


def _ranks(scores: np.ndarray) -> np.ndarray:
    """Rank 1 for the highest score: 1 + the number of strictly higher scores (NaN counts as lower)."""
    s = np.where(np.isnan(scores), -np.inf, scores)
    return 1 + (s[..., None, :] > s[..., :, None]).sum(-1)


def _interval(point, draws, alpha):
    lo, hi = _percentile(draws, alpha / 2), _percentile(draws, 1 - alpha / 2)
    if lo is None:
        return None, None, False
    extended = bool(point < lo or point > hi)
    return float(min(lo, point)), float(max(hi, point)), extended


def leaderboard(
    bt: Battles, *, ties: str = "half", n_boot: int = 1000, alpha: float = 0.05, seed: int = 0
) -> Leaderboard:
    """Scores, percentile intervals, ranks and rank intervals of every system (see the module docstring).

    Examples
    --------
    >>> from hcs.ranking.battles import battles
    >>> bt = battles([0, 1, 2, 3, 4, 5], [0, 0, 1, 1, 2, 0], [1, 1, 2, 2, 0, 2], ["a", "b", "a", "tie", "a", "a"])
    >>> board = leaderboard(bt, n_boot=200)
    >>> [(r.system, round(r.score, 4) + 0.0, r.rank, r.wins, r.losses, r.ties) for r in board.rows]
    [(0, 0.0, 2, 2, 2, 0), (1, 0.343, 1, 2, 1, 1), (2, -0.343, 3, 1, 2, 1)]
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), not {alpha}")
    if len(bt) == 0:
        raise ValueError("no battles to rank")
    if n_boot < 1:
        raise ValueError(f"n_boot must be at least 1, not {n_boot}")
    pc, k = prompt_counts(bt), bt.n_systems
    mask, how = standing(pc.totals(), pc.pairs, k)
    cols, sub_pairs = _sub(pc, mask)
    m = int(mask.sum())
    est = (np.zeros(m), None)
    if m >= 2:
        fit = fit_counts(np.asarray(pc.table[:, cols].sum(0)).reshape(-1, 3), sub_pairs, m, ties=ties)
        est = (fit.scores[0], None if fit.log_nu is None else float(fit.log_nu[0]))
        draws, degenerate = _replicates(pc, cols, sub_pairs, m, est, ties, n_boot, seed)
    else:
        draws, degenerate = np.zeros((n_boot, m)), 0
    n_above = how.count("above")
    rank_draws = _ranks(draws) + n_above
    point_ranks = _ranks(est[0]) + n_above
    record, battles_per = _record(bt), np.bincount(np.concatenate([bt.a, bt.b]), minlength=k)
    index, rows = np.cumsum(mask) - 1, []
    for i in range(k):
        common = dict(
            system=i,
            n_battles=int(battles_per[i]),
            wins=int(record[i, 0]),
            losses=int(record[i, 1]),
            ties=int(record[i, 2]),
            standing=how[i],
        )
        if how[i] == "fitted":
            j = index[i]
            lo, hi, ext = _interval(est[0][j], draws[:, j], alpha)
            r_lo, r_hi, _ = _interval(point_ranks[j], rank_draws[:, j].astype(float), alpha)
            rows.append(
                SystemScore(
                    score=float(est[0][j]),
                    ci_low=lo,
                    ci_high=hi,
                    rank=int(point_ranks[j]),
                    rank_low=int(r_lo),
                    rank_high=int(r_hi),
                    ci_extended=ext,
                    **common,
                )
            )
            continue
        rows.append(_unfitted(bt, i, how, mask, est, ties, alpha, common))
    return Leaderboard(tuple(rows), ties, est[1], n_boot, pc.n_prompts, degenerate, alpha)


def _unfitted(bt, i, how, mask, est, ties, alpha, common) -> SystemScore:
    """The row of a system outside the fitted group: an infinite score with a likelihood-ratio end, or none."""
    k, n_above, n_below = bt.n_systems, how.count("above"), how.count("below")
    sign = {"above": 1, "below": -1}.get(how[i], 0)
    if not sign:
        return SystemScore(
            score=np.nan, ci_low=None, ci_high=None, rank=None, rank_low=1, rank_high=k, **common
        )
    bound = _bound(_direct(bt, i, mask, np.cumsum(mask) - 1), est[0], est[1], ties, sign, alpha)
    if sign > 0:
        rank = 1 if n_above == 1 else None
        return SystemScore(
            score=np.inf, ci_low=bound, ci_high=np.inf, rank=rank, rank_low=1, rank_high=n_above, **common
        )
    rank = k if n_below == 1 else None
    return SystemScore(
        score=-np.inf,
        ci_low=-np.inf,
        ci_high=bound,
        rank=rank,
        rank_low=k - n_below + 1,
        rank_high=k,
        **common,
    )


def _direct(bt: Battles, i: int, mask, index) -> list[tuple[int, float]]:
    """Battles of system ``i`` against each fitted system it met (as (fitted index, count))."""
    other = np.where(bt.a == i, bt.b, np.where(bt.b == i, bt.a, -1))
    met = other[(other >= 0)]
    met = met[mask[met]]
    return [(int(index[j]), float(c)) for j, c in zip(*np.unique(met, return_counts=True), strict=True)]
