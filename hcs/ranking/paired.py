"""Paired differences of Likert scores between two systems, with PPI++, and the position bias of pairwise verdicts.

Paired difference. Two systems answer the same prompts; d_p = score_B(p) − score_A(p) is the difference on
prompt p (each side the mean of its raters there). Prompts are taken as a random sample and the d_p as
independent: the mean of d has the Student t interval on n − 1 degrees of freedom. Pairing removes the prompt's
own difficulty from both sides, so whenever prompts vary (scores correlate across systems on a prompt) the
interval is narrower than Welch's unpaired one, which is computed beside it for comparison.

PPI++. A judge scores both systems on every prompt and people on a random subset; the human difference on the
subset is combined with the judge's difference on all prompts by :func:`hcs.ppi.ppi_mean` (the power-tuned PPI++
mean, tested against ``ppi_py``). Its ``ci95`` is the super-population interval, the same target as the t
interval; ``ci95_batch`` is for the mean over these prompts alone.

Position bias. Among decisive verdicts (``a`` or ``b``) whose left side was recorded, the share that chose the
response shown on the left, with a Wilson interval and an exact two-sided binomial test of ½.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from hcs.calibration.pairwise import wilson
from hcs.ppi import ppi_mean
from hcs.ranking.battles import Battles

__all__ = ["LeftChoice", "PairedDifference", "left_choice_rate", "paired_difference", "ppi_paired_difference"]


@dataclass(frozen=True)
class PairedDifference:
    """Mean of B − A over prompts with the paired t interval, and Welch's unpaired interval beside it."""

    mean_difference: float
    ci95: tuple[float, float]
    n_prompts: int
    unpaired_ci95: tuple[float, float]
    alpha: float = 0.05

    def to_json(self) -> dict:
        return {"mean_difference": self.mean_difference, "ci95": list(self.ci95), "n_prompts": self.n_prompts}


def _finite_pair(x, y, names):
    x, y = np.asarray(x, dtype=float).ravel(), np.asarray(y, dtype=float).ravel()
    if len(x) != len(y):
        raise ValueError(f"{names[0]} has {len(x)} prompts but {names[1]} has {len(y)}")
    bad = np.flatnonzero(~(np.isfinite(x) & np.isfinite(y)))
    if len(bad):
        raise ValueError(f"prompt {bad[0]}: {names[0]} or {names[1]} is not a finite number")
    return x, y


def paired_difference(scores_a, scores_b, *, alpha: float = 0.05) -> PairedDifference:
    """Mean difference B − A paired by prompt, with a t interval (row p of both arrays is prompt p).

    >>> r = paired_difference([3, 4, 2, 5], [4, 4, 3, 5])
    >>> r.mean_difference, [round(x, 4) for x in r.ci95]
    (0.5, [-0.4187, 1.4187])
    """
    a, b = _finite_pair(scores_a, scores_b, ("scores_a", "scores_b"))
    n = len(a)
    if n < 2:
        raise ValueError(f"a paired interval needs at least 2 prompts, not {n}")
    d = b - a
    mean, se = float(d.mean()), float(d.std(ddof=1) / math.sqrt(n))
    q = float(stats.t.ppf(1 - alpha / 2, n - 1))
    va, vb = a.var(ddof=1) / n, b.var(ddof=1) / n
    se_u = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (n - 1) + vb**2 / (n - 1)) if va + vb > 0 else n - 1
    qu = float(stats.t.ppf(1 - alpha / 2, df))
    return PairedDifference(
        mean, (mean - q * se, mean + q * se), n, (mean - qu * se_u, mean + qu * se_u), alpha
    )


def ppi_paired_difference(
    human_a, human_b, judge_a, judge_b, judge_a_unlabelled, judge_b_unlabelled, *, alpha: float = 0.05
) -> dict | None:
    """PPI++ estimate of the mean difference B − A: people on some prompts, the judge on all.

    The first four arrays are aligned on the prompts people rated; the last two hold the judge's scores on the
    other prompts. Returns ``{"estimate", "ci95", "ci95_batch", "lambda", "n_labelled", "n_unlabelled"}``, or
    None with fewer than two rated prompts.
    """
    ha, hb = _finite_pair(human_a, human_b, ("human_a", "human_b"))
    ja, jb = _finite_pair(judge_a, judge_b, ("judge_a", "judge_b"))
    ua, ub = _finite_pair(
        judge_a_unlabelled, judge_b_unlabelled, ("judge_a_unlabelled", "judge_b_unlabelled")
    )
    if len(ha) != len(ja):
        raise ValueError(f"{len(ha)} rated prompts but judge scores on {len(ja)}")
    r = ppi_mean(hb - ha, jb - ja, ub - ua, alpha=alpha)
    if r is None:
        return None
    return {
        "estimate": r.estimate,
        "ci95": list(r.ci95_superpopulation),
        "ci95_batch": list(r.ci95),
        "lambda": r.lam,
        "n_labelled": r.n_labelled,
        "n_unlabelled": r.n_unlabelled,
    }


@dataclass(frozen=True)
class LeftChoice:
    """Share of decisive verdicts that chose the left response, its Wilson 95 % interval and binomial p."""

    rate: float | None
    ci95: tuple[float | None, float | None]
    n_decisive: int
    n_left: int
    p_value: float | None


def left_choice_rate(bt: Battles) -> LeftChoice:
    """Position bias: how often a decisive verdict chose the side shown on the left.

    >>> from hcs.ranking.battles import battles
    >>> r = left_choice_rate(battles([0] * 4, [0] * 4, [1] * 4, ["a", "a", "b", "tie"], left=["a", "b", "b", "a"]))
    >>> round(r.rate, 4), r.n_decisive, r.n_left
    (0.6667, 3, 2)
    """
    if bt.left is None:
        return LeftChoice(None, (None, None), 0, 0, None)
    known = (bt.left >= 0) & (bt.outcome <= 1)
    n = int(known.sum())
    n_left = int((bt.outcome[known] == bt.left[known]).sum())
    if n == 0:
        return LeftChoice(None, (None, None), 0, 0, None)
    p = float(stats.binomtest(n_left, n, 0.5).pvalue)
    return LeftChoice(n_left / n, wilson(n_left, n), n, n_left, p)
