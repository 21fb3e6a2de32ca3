"""Pairwise verdicts (baseline vs enhanced, as in the G-Eval template) against the human preference.

The human preference between two items is read from their overall HCS (mean over annotators): the
item with the higher mean wins; a difference below ``tie_margin`` is a tie.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

OUTCOMES = ("baseline", "enhanced", "tie")
DEFAULT_TIE_MARGIN = 0.25
DEFAULT_CONFIDENT = 0.8


def human_preference(baseline_hcs: float, enhanced_hcs: float, *, tie_margin: float = DEFAULT_TIE_MARGIN) -> str:
    """``"baseline"``, ``"enhanced"`` or ``"tie"`` from the two items' mean overall HCS.

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
    """Unweighted Cohen's κ of two label sequences over fixed ``categories``."""
    index = {c: n for n, c in enumerate(categories)}
    table = np.zeros((len(categories), len(categories)))
    for x, y in zip(a, b):
        table[index[x], index[y]] += 1
    n = table.sum()
    if n == 0:
        return math.nan
    p_observed = np.trace(table) / n
    p_expected = float(table.sum(axis=1) @ table.sum(axis=0)) / n**2
    if p_expected == 1:
        return math.nan
    return float((p_observed - p_expected) / (1 - p_expected))


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
    """Agreement rate, Cohen's κ over the three outcomes, and accuracy of the confident verdicts."""
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
        kappa=None if not math.isfinite(kappa) else kappa,
        confident_threshold=confident_threshold,
        n_confident=len(confident),
        confident_accuracy=float(np.mean(confident)) if confident else None,
        table=table.tolist(),
    )
