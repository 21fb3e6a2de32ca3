"""Pairwise verdicts (baseline vs enhanced, as in the G-Eval template) against the human preference.

The human preference between two items is read from their overall HCS (mean over annotators): the
item with the higher mean wins; a difference below ``tie_margin`` is a tie.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hcs.calibration.metrics import kappa_of_table
from hcs.numbers import finite_or_none

OUTCOMES = ("baseline", "enhanced", "tie")
DEFAULT_TIE_MARGIN = 0.25
DEFAULT_CONFIDENT = 0.8


def human_preference(baseline_hcs: float, enhanced_hcs: float, *, tie_margin: float = DEFAULT_TIE_MARGIN) -> str:
    """``"baseline"``, ``"enhanced"`` or ``"tie"`` from the two items' mean overall HCS.

    Parameters
    ----------
    baseline_hcs, enhanced_hcs : float
        The people's mean overall score of each item.
    tie_margin : float
        Differences smaller than this are a tie.

    Returns
    -------
    str

    Examples
    --------

    >>> human_preference(3.4, 4.1)
    'enhanced'
    >>> human_preference(3.4, 3.5)
    'tie'
    """
    difference = enhanced_hcs - baseline_hcs
    if abs(difference) < tie_margin:
        return "tie"
    return "enhanced" if difference > 0 else "baseline"


def cohen_kappa(a: Sequence[str], b: Sequence[str], categories: Sequence[str] = OUTCOMES) -> float:
    """Unweighted Cohen's κ of two label sequences over fixed ``categories``; NaN when undefined.

    The contingency table is counted here; κ comes from ``statsmodels.stats.inter_rater.cohens_kappa``.

    References
    ----------
    Cohen, J. (1960). A coefficient of agreement for nominal scales. *Educational and Psychological
    Measurement* 20(1), 37–46.
    """
    index = {c: n for n, c in enumerate(categories)}
    table = np.zeros((len(categories), len(categories)))
    for x, y in zip(a, b):
        table[index[x], index[y]] += 1
    return kappa_of_table(table)


@dataclass(frozen=True)
class PairwiseComparison:
    n: int
    agreement: float | None
    kappa: float | None
    confident_threshold: float
    n_confident: int
    confident_accuracy: float | None  # share of verdicts with confidence ≥ threshold that match people
    table: list[list[int]]  # rows: human outcome, columns: judge outcome, in OUTCOMES order


def compare_verdicts(
    judge: Sequence[str],
    human: Sequence[str],
    confidence: Sequence[float | None] | None = None,
    *,
    confident_threshold: float = DEFAULT_CONFIDENT,
) -> PairwiseComparison:
    """Agreement rate, Cohen's κ over the three outcomes, and accuracy of the confident verdicts.

    Parameters
    ----------
    judge, human : sequence of str
        Paired verdicts, each ``"baseline"``, ``"enhanced"`` or ``"tie"``.
    confidence : sequence of float or None, optional
        The judge's stated confidence per verdict.
    confident_threshold : float
        Verdicts at or above it count as confident.

    Returns
    -------
    PairwiseComparison

    References
    ----------
    Cohen, J. (1960). A coefficient of agreement for nominal scales. *Educational and Psychological
    Measurement* 20(1), 37–46.
    """
    if len(judge) != len(human):
        raise ValueError("judge and human verdicts differ in length")
    for label in (*judge, *human):
        if label not in OUTCOMES:
            raise ValueError(f"verdict {label!r} is not one of {', '.join(OUTCOMES)}")
    confidence = list(confidence) if confidence is not None else [None] * len(judge)
    n = len(judge)
    matches = [j == h for j, h in zip(judge, human)]
    confident = [m for m, c in zip(matches, confidence) if c is not None and c >= confident_threshold]
    table = np.zeros((3, 3), dtype=int)
    for j, h in zip(judge, human):
        table[OUTCOMES.index(h), OUTCOMES.index(j)] += 1
    kappa = cohen_kappa(judge, human) if n else math.nan
    return PairwiseComparison(
        n=n,
        agreement=float(np.mean(matches)) if n else None,
        kappa=finite_or_none(kappa),
        confident_threshold=confident_threshold,
        n_confident=len(confident),
        confident_accuracy=float(np.mean(confident)) if confident else None,
        table=table.tolist(),
    )
