"""How a judge fails: length bias and score use, per judge × dimension.

Inputs are arrays aligned by item, so a notebook can run the same probes on an exported CSV:
``lengths`` (response length in characters), ``judge`` (the judge's value already mapped onto the
rubric's scale) and ``human_mean`` (the mean of the people who rated that item).

References
----------
Dubois, Galambosi, Liang & Hashimoto (2024). Length-Controlled AlpacaEval: A Simple Way to Debias
Automatic Evaluators. arXiv:2404.04475 — regressing the judge on length is their length control.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from hcs.calibration.metrics import (
    N_BOOT,
    SCALE,
    _corr,
    bootstrap_ci,
    round_half_up,
)
from hcs.numbers import finite_or_none

FEW_LEVELS = 2  # a judge using this many levels of the scale or fewer is flagged
MIN_ITEMS_OLS = 5  # fewer items than this leave too few residual degrees of freedom for a coefficient


def _ci_pair(ci: tuple[float, float]) -> tuple[float | None, float | None]:
    return (finite_or_none(ci[0]), finite_or_none(ci[1]))


@dataclass(frozen=True)
class Coefficient:
    """One OLS coefficient with its 95% confidence interval (t distribution), as statsmodels' OLS gives it."""

    value: float | None
    ci95: tuple[float | None, float | None]
    p_value: float | None


@dataclass(frozen=True)
class LengthBias:
    n: int
    spearman: float | None  # length vs judge residual (judge − human mean)
    ci95: tuple[float | None, float | None]
    human_spearman: float | None  # length vs human mean: is longer really better?
    human_ci95: tuple[float | None, float | None]
    coef: Coefficient  # log(length) in judge ~ 1 + human mean + log(length)
    coef_per_1000_chars: Coefficient  # length / 1000 in judge ~ 1 + human mean + length / 1000


def ols_coefficient(y, human_mean, length_term) -> Coefficient:
    """The coefficient of ``length_term`` when ``y`` is regressed on a constant, ``human_mean`` and it."""
    y, h, t = (np.asarray(a, dtype=float) for a in (y, human_mean, length_term))
    if len(y) < MIN_ITEMS_OLS or np.ptp(t) == 0:
        return Coefficient(None, (None, None), None)
    design = np.column_stack([np.ones_like(h), h, t])
    if np.linalg.matrix_rank(design) < 3:  # length carries no information beyond the human mean
        return Coefficient(None, (None, None), None)
    # Ordinary least squares by numpy: importing statsmodels' OLS costs more than a report's probes.
    from scipy.stats import t as student_t

    params, _, _, _ = np.linalg.lstsq(design, y, rcond=None)
    dof = len(y) - 3
    residual = y - design @ params
    sigma2 = float(residual @ residual) / dof
    se = math.sqrt(sigma2 * np.linalg.inv(design.T @ design)[2, 2])
    beta = float(params[2])
    if se == 0:  # an exact fit: the coefficient is known, its interval and p-value are not defined
        return Coefficient(finite_or_none(beta), (None, None), None)
    half = float(student_t.ppf(0.975, dof)) * se
    p = float(2 * student_t.sf(abs(beta / se), dof))
    return Coefficient(finite_or_none(beta), _ci_pair((beta - half, beta + half)), finite_or_none(p))


def length_bias(lengths, judge, human_mean, *, n_boot: int = N_BOOT, seed: int = 0) -> LengthBias:
    """Does the judge reward length beyond what people do?

    ``spearman``: Spearman's ρ between length and the judge's residual against the human mean, with a
    percentile bootstrap 95% CI over items (the vectorised :func:`bootstrap_ci`). ``human_spearman``:
    the same for the human mean itself, so a real link between length and quality shows there and not
    as judge bias. ``coef``: the OLS coefficient of log length with the human mean held fixed
    (Dubois et al., 2024), in rubric points per unit of log length.
    """
    lengths, judge, human_mean = (np.asarray(a, dtype=float) for a in (lengths, judge, human_mean))
    if not len(lengths) == len(judge) == len(human_mean):
        raise ValueError("lengths, judge and human_mean must have one value per item")
    if len(lengths) and lengths.min() <= 0:
        raise ValueError("every response length must be at least 1 character")
    residual = judge - human_mean
    return LengthBias(
        n=len(lengths),
        spearman=finite_or_none(_corr("spearman", lengths, residual)),
        ci95=_ci_pair(bootstrap_ci(lengths, residual, "spearman", n_boot=n_boot, seed=seed)),
        human_spearman=finite_or_none(_corr("spearman", lengths, human_mean)),
        human_ci95=_ci_pair(bootstrap_ci(lengths, human_mean, "spearman", n_boot=n_boot, seed=seed)),
        coef=ols_coefficient(judge, human_mean, np.log(lengths) if len(lengths) else lengths),
        coef_per_1000_chars=ols_coefficient(judge, human_mean, lengths / 1000.0),
    )


@dataclass(frozen=True)
class ScoreUse:
    levels: tuple[int, ...]  # the rubric's levels, low to high
    judge_counts: tuple[int, ...]  # judge values rounded (half up) to a level
    human_counts: tuple[int, ...]  # every individual human rating on the same items
    levels_used: int  # levels the judge gave at least once
    human_levels_used: int

    @property
    def few_levels(self) -> bool:
        """The judge uses ``FEW_LEVELS`` levels or fewer: it barely discriminates."""
        return self.levels_used <= FEW_LEVELS

    def shares(self, counts: tuple[int, ...]) -> tuple[float | None, ...]:
        total = sum(counts)
        return tuple(c / total if total else None for c in counts)


def score_use(judge, human_ratings, *, scale: tuple[int, int] = SCALE) -> ScoreUse:
    """How many of the scale's levels the judge uses, beside the distribution of the human ratings.

    ``judge``: the judge's values (one per item, fractional values rounded half up to a level);
    ``human_ratings``: every human rating on those items (an overall HCS is rounded the same way).
    """
    lo, hi = scale
    levels = tuple(range(lo, hi + 1))
    judge_cat = np.clip(round_half_up(judge), lo, hi).astype(int)
    human = np.asarray(human_ratings, dtype=float)
    human = round_half_up(human[np.isfinite(human)]).astype(int)
    if human.size and (human.min() < lo or human.max() > hi):
        raise ValueError(f"a human rating lies outside {lo}–{hi}")
    judge_counts = np.bincount(judge_cat - lo, minlength=len(levels))
    human_counts = np.bincount(human - lo, minlength=len(levels))
    return ScoreUse(
        levels=levels,
        judge_counts=tuple(int(c) for c in judge_counts),
        human_counts=tuple(int(c) for c in human_counts),
        levels_used=int(np.count_nonzero(judge_counts)),
        human_levels_used=int(np.count_nonzero(human_counts)),
    )
