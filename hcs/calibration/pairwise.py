"""Pairwise verdicts (baseline vs enhanced, as in the G-Eval template) against the human preference.

The human preference between two items is read from their overall HCS (mean over annotators): the
item with the higher mean wins; a difference below ``tie_margin`` is a tie.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from hcs.calibration.metrics import kappa_of_table
from hcs.numbers import finite_or_none

OUTCOMES = ("baseline", "enhanced", "tie")
DEFAULT_TIE_MARGIN = 0.25
DEFAULT_CONFIDENT = 0.8


def human_preference(
    baseline_hcs: float, enhanced_hcs: float, *, tie_margin: float = DEFAULT_TIE_MARGIN
) -> str:
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


def wilson(successes: int, n: int) -> tuple[float | None, float | None]:
    """Wilson score 95% interval of a proportion (statsmodels); (None, None) when n = 0.

    Parameters
    ----------
    successes, n : int
        Successes out of ``n`` trials.

    Returns
    -------
    tuple of float or None
        The interval's low and high ends.

    References
    ----------
    Wilson, E. B. (1927). Probable inference, the law of succession, and statistical inference.
    *Journal of the American Statistical Association* 22(158), 209–212.

    Examples
    --------
    >>> [round(x, 4) for x in wilson(8, 10)]
    [0.4902, 0.9433]
    """
    if n == 0:
        return (None, None)
    # Imported on first use: an app worker starts without statsmodels.
    from statsmodels.stats.proportion import proportion_confint

    lo, hi = proportion_confint(successes, n, alpha=0.05, method="wilson")
    return (float(lo), float(hi))


@dataclass(frozen=True)
class PairOutcome:
    """One pair, counted once: its outcome in the baseline/enhanced orientation of the run."""

    baseline: Hashable
    enhanced: Hashable
    outcome: str
    confidence: float | None
    both_orders: bool  # judged with either response shown first
    consistent: bool | None  # both orders named the same response (or both a tie); None: one order only


def pair_outcomes(
    verdicts: Sequence[tuple[Hashable, Hashable, str, bool, float | None]],
) -> list[PairOutcome]:
    """Each pair once, from verdicts ``(shown first, shown second, verdict, swapped, confidence)``.

    ``verdict`` names the position that won (``"baseline"`` is the response shown first, as in the
    G-Eval template); ``swapped`` marks the call that showed the enhanced system's response first. A pair
    judged in both orders wins only when both orders name the same response and is a tie otherwise
    (the conservative rule of Zheng et al., 2023); its confidence is the mean of those stated.

    Parameters
    ----------
    verdicts : sequence of tuple
        ``(shown first, shown second, verdict, swapped, confidence)`` per call; each pair at most once
        per order.

    Returns
    -------
    list of PairOutcome
        One per pair, in the order pairs first appear.

    References
    ----------
    Zheng, L. et al. (2023). Judging LLM-as-a-Judge with MT-Bench and Chatbot Arena. *NeurIPS 2023
    Datasets and Benchmarks*, section 3.3 (position bias, "conservative" swap).

    Examples
    --------
    >>> [p.outcome for p in pair_outcomes([("b1", "e1", "enhanced", False, 0.9), ("e1", "b1", "baseline", True, 0.7),
    ...                                     ("b2", "e2", "baseline", False, 0.8), ("e2", "b2", "baseline", True, 0.6)])]
    ['enhanced', 'tie']
    """
    by_pair: dict[frozenset, dict[bool, tuple[Hashable, Hashable, str, float | None]]] = {}
    order: list[frozenset] = []
    for first, second, verdict, swapped, confidence in verdicts:
        if verdict not in OUTCOMES:
            raise ValueError(f"verdict {verdict!r} is not one of {', '.join(OUTCOMES)}")
        key = frozenset((first, second))
        if key not in by_pair:
            order.append(key)
        if bool(swapped) in by_pair.setdefault(key, {}):
            raise ValueError(f"the pair {first!r}, {second!r} appears twice in the same order")
        by_pair[key][bool(swapped)] = (first, second, verdict, confidence)
    out = []
    for key in order:
        sides = by_pair[key]
        named = {}  # swapped → (baseline item, enhanced item, outcome in that orientation)
        for swapped, (first, second, verdict, _) in sides.items():
            baseline, enhanced = (second, first) if swapped else (first, second)
            if verdict == "tie":
                outcome = "tie"
            else:
                winner = first if verdict == "baseline" else second
                outcome = "baseline" if winner == baseline else "enhanced"
            named[swapped] = (baseline, enhanced, outcome)
        stated = [c for *_, c in sides.values() if c is not None]
        confidence = sum(stated) / len(stated) if stated else None
        if len(named) == 2:
            (baseline, enhanced, o1), (_, _, o2) = named[False], named[True]
            consistent = o1 == o2
            out.append(
                PairOutcome(baseline, enhanced, o1 if consistent else "tie", confidence, True, consistent)
            )
        else:
            ((baseline, enhanced, outcome),) = named.values()
            out.append(PairOutcome(baseline, enhanced, outcome, confidence, False, None))
    return out


def cohen_kappa(a: Sequence[str], b: Sequence[str], categories: Sequence[str] = OUTCOMES) -> float:
    """Unweighted Cohen's κ of two label sequences over fixed ``categories``; NaN when undefined.

    The contingency table is counted here; κ is computed as ``statsmodels.stats.inter_rater.cohens_kappa``
    computes it.

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
    agreement_ci95: tuple[float | None, float | None] = (None, None)  # Wilson interval of ``agreement``


def compare_verdicts(
    judge: Sequence[str],
    human: Sequence[str],
    confidence: Sequence[float | None] | None = None,
    *,
    confident_threshold: float = DEFAULT_CONFIDENT,
) -> PairwiseComparison:
    """Agreement rate with its Wilson 95% interval, Cohen's κ over the three outcomes, and accuracy of the
    confident verdicts.

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
        agreement_ci95=wilson(int(sum(matches)), n),
    )
