"""The Alternative Annotator Test (alt-test).

Calderon, N., Reichart, R. & Dror, R. (2025). *The Alternative Annotator Test for LLM-as-a-Judge: How to
Statistically Justify Replacing Human Annotators with LLMs.* arXiv:2501.10970.

Procedure, for one judge on one dimension:

1. Keep the items the judge scored that at least two annotators rated (one remains when one is left
   out). Annotators with fewer than ``min_items`` (30) such items are left out of the test.
2. For each annotator *j* and each of their items *i*: the similarity of the judge's label and of *j*'s
   label to the labels of the *remaining* annotators of *i* — negative RMSE for 1–5 scores, exact-match
   accuracy for categories. ``W_f = 1`` when the judge is at least as similar as *j*, ``W_h = 1`` when *j* is
   at least as similar as the judge (a tie counts as a win for both).
3. One-sided paired t-test per annotator on ``d_i = W_h − W_f``: H0 ``mean(d) ≥ ε`` against H1
   ``mean(d) < ε``, where ε is the cost-benefit margin granted to the judge.
4. Benjamini–Yekutieli correction over the annotators' p-values at q = 0.05. The winning rate ω is the
   share of annotators whose null is rejected; the advantage probability ρ is the mean over annotators
   of ``mean(W_f)``. The judge can replace an annotator when ω ≥ 0.5.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from hcs.defaults import DEFAULT_EPSILON

MIN_ITEMS = 30
MIN_HUMANS_PER_ITEM = 2
DEFAULT_Q = 0.05
# Below these the verdict is reported with a warning: with fewer items or annotators the test has little
# power and one annotator decides ω (the judge card's evidence rule).
RECOMMENDED_ITEMS = 50
RECOMMENDED_ANNOTATORS = 3


def evidence_warnings(n_items: int, n_annotators: int) -> list[str]:
    """Why an alt-test verdict rests on thin evidence: n < 50 items or k < 3 annotators tested."""
    warnings = []
    if n_items < RECOMMENDED_ITEMS:
        warnings.append(f"only {n_items} item(s) (n < {RECOMMENDED_ITEMS}): the verdict is weak evidence")
    if n_annotators < RECOMMENDED_ANNOTATORS:
        warnings.append(
            f"only {n_annotators} annotator(s) tested (k < {RECOMMENDED_ANNOTATORS}): "
            "ω rests on too few comparisons"
        )
    return warnings


@dataclass(frozen=True)
class AnnotatorComparison:
    annotator: Hashable
    n_items: int
    judge_win_rate: float  # mean(W_f): how often the judge is at least as close to the others
    annotator_win_rate: float  # mean(W_h)
    p_value: float
    judge_wins: bool  # null rejected after the Benjamini–Yekutieli correction


@dataclass(frozen=True)
class AltTestResult:
    epsilon: float
    q: float
    n_items: int  # items with the judge's score and ≥ 2 annotators
    comparisons: tuple[AnnotatorComparison, ...]
    skipped: tuple[tuple[Hashable, int], ...]  # annotators with fewer than min_items shared items
    winning_rate: float | None  # ω; None when no annotator qualifies
    advantage_probability: float | None  # ρ
    min_items: int = MIN_ITEMS  # shared items an annotator needs to be tested

    @property
    def warnings(self) -> list[str]:
        """Thin evidence behind a verdict (none when there is no verdict: ``missing`` says why)."""
        return [] if self.winning_rate is None else evidence_warnings(self.n_items, len(self.comparisons))

    @property
    def passed(self) -> bool:
        return self.winning_rate is not None and self.winning_rate >= 0.5

    @property
    def outcome(self) -> bool | None:
        """True (passes), False (fails), None (not testable: no annotator shares enough items)."""
        return None if self.winning_rate is None else self.passed

    @property
    def verdict(self) -> str:
        if self.winning_rate is None:
            return self.missing

        can = "can" if self.passed else "cannot"
        return f"the judge {can} replace an annotator at ε = {self.epsilon:g}"

    @property
    def missing(self) -> str:
        """Why the test could not run, and what more data would let it: not a failed judge."""
        need = self.min_items
        if self.n_items < need:
            return (
                f"not testable yet: {self.n_items} item{'s' if self.n_items != 1 else ''} have this judge's score "
                f"and at least two people's ratings; the test needs {need}, so "
                f"{need - self.n_items} more such item{'s' if need - self.n_items != 1 else ''} (and an annotator "
                f"who rated {need} of them)"
            )
        best = max((n for _, n in self.skipped), default=0)
        return (
            f"not testable yet: {len(self.skipped)} annotator{'s' if len(self.skipped) != 1 else ''} rated "
            f"at most {best} of the {self.n_items} items with this judge's score and at least two ratings; "
            f"the test needs one who rated {need}, so {need - best} more from the closest annotator"
        )


def neg_rmse(label: float, others: Sequence[float]) -> float:
    """Negative root-mean-square difference of ``label`` to ``others`` (plain Python: lists are short)."""
    label = float(label)
    return -math.sqrt(sum((label - float(o)) ** 2 for o in others) / len(others))


def accuracy(label, others: Sequence) -> float:
    return sum(label == other for other in others) / len(others)


def benjamini_yekutieli(p_values: Sequence[float], q: float = DEFAULT_Q) -> list[bool]:
    """Which hypotheses the Benjamini–Yekutieli step-up procedure rejects at FDR ``q``.

    Reject the hypotheses with the k smallest p-values, k the largest rank with
    ``p_(k) ≤ k / (m · H_m) · q`` and ``H_m = Σ 1/i``; valid under any dependence. Computed by
    ``statsmodels.stats.multitest.multipletests(method="fdr_by")``.

    References
    ----------
    Benjamini, Y. and Yekutieli, D. (2001). The control of the false discovery rate in multiple
    testing under dependency. *Annals of Statistics* 29(4), 1165–1188.
    """
    if len(p_values) == 0:
        return []
    # Imported on first use: the web app's rating workers never need statsmodels.
    from statsmodels.stats.multitest import multipletests

    return multipletests(np.asarray(p_values, dtype=float), alpha=q, method="fdr_by")[0].tolist()


def _one_sided_p(differences: np.ndarray, epsilon: float) -> float:
    """p-value of H0 mean(d) ≥ ε vs H1 mean(d) < ε (one-sample t-test, i.e. the paired test)."""
    # imported on first use: the web app's rating workers never need scipy
    from scipy import stats

    if np.ptp(differences) == 0:
        # No spread: the t statistic is ±∞ (or undefined at equality); decide by the mean alone.
        return 0.0 if differences[0] < epsilon else 1.0
    return float(stats.ttest_1samp(differences, epsilon, alternative="less").pvalue)


def _shared_items(human, judge, min_humans_per_item: int) -> tuple[dict, dict[Hashable, list[Hashable]]]:
    """({item: ratings} of the items the judge scored and enough annotators rated, {annotator: their
    items among them})."""
    items = {
        item: ratings
        for item, ratings in human.items()
        if item in judge and judge[item] is not None and len(ratings) >= min_humans_per_item
    }
    by_annotator: dict[Hashable, list[Hashable]] = {}
    for item, ratings in items.items():
        for annotator in ratings:
            by_annotator.setdefault(annotator, []).append(item)
    return items, by_annotator


def _compare(annotator, their_items, items, judge, similarity, epsilon: float) -> tuple:
    """(annotator, n, mean(W_f), mean(W_h), p) for one annotator: on each of their items, whether the
    judge's label and theirs are at least as close to the remaining annotators' as the other's."""
    w_judge, w_human = [], []
    for item in their_items:
        ratings = items[item]
        others = [label for who, label in ratings.items() if who != annotator]
        s_human = similarity(ratings[annotator], others)
        s_judge = similarity(judge[item], others)
        w_judge.append(1 if s_judge >= s_human else 0)
        w_human.append(1 if s_human >= s_judge else 0)
    d = np.asarray(w_human, dtype=float) - np.asarray(w_judge, dtype=float)
    return (
        annotator,
        len(their_items),
        float(np.mean(w_judge)),
        float(np.mean(w_human)),
        _one_sided_p(d, epsilon),
    )


def _corrected(candidates: list[tuple], q: float) -> tuple[AnnotatorComparison, ...]:
    """Each annotator's comparison, ``judge_wins`` after the Benjamini–Yekutieli correction over all."""
    rejected = benjamini_yekutieli([c[4] for c in candidates], q)
    return tuple(
        AnnotatorComparison(
            annotator=a, n_items=n, judge_win_rate=wf, annotator_win_rate=wh, p_value=p, judge_wins=r
        )
        for (a, n, wf, wh, p), r in zip(candidates, rejected)
    )


def alt_test(
    human: Mapping[Hashable, Mapping[Hashable, object]],
    judge: Mapping[Hashable, object],
    *,
    epsilon: float = DEFAULT_EPSILON,
    q: float = DEFAULT_Q,
    metric: str = "neg_rmse",
    min_items: int = MIN_ITEMS,
    min_humans_per_item: int = MIN_HUMANS_PER_ITEM,
) -> AltTestResult:
    """Run the alt-test: may the judge replace the annotators on this dimension?

    Parameters
    ----------
    human : mapping
        ``{item: {annotator: label}}``.
    judge : mapping
        ``{item: label}``, the judge's label on the same scale as the humans' (mapped onto 1–5).
    epsilon : float
        The cost-benefit margin ε granted to the judge, in [0, 1).
    q : float
        False discovery rate of the Benjamini–Yekutieli correction.
    metric : {"neg_rmse", "accuracy"}
        ``"neg_rmse"`` for numeric scores, ``"accuracy"`` for categories.
    min_items : int
        Annotators with fewer shared items are left out (listed in ``skipped``).
    min_humans_per_item : int
        Items need this many annotators (one is left out, the rest are the reference).

    Returns
    -------
    AltTestResult
        The winning rate ω, the advantage probability ρ, ``passed`` (ω ≥ 0.5) and the per-annotator
        comparisons.

    References
    ----------
    Calderon, N., Reichart, R. and Dror, R. (2025). The Alternative Annotator Test for
    LLM-as-a-Judge: How to Statistically Justify Replacing Human Annotators with LLMs.
    arXiv:2501.10970.
    """
    if metric not in ("neg_rmse", "accuracy"):
        raise ValueError(f"metric must be 'neg_rmse' or 'accuracy', not {metric!r}")
    if not 0 < q < 1:
        raise ValueError(f"q must lie in (0, 1), not {q}")
    similarity = neg_rmse if metric == "neg_rmse" else accuracy
    items, by_annotator = _shared_items(human, judge, min_humans_per_item)
    candidates, skipped = [], []
    for annotator in sorted(by_annotator, key=str):
        their_items = by_annotator[annotator]
        if len(their_items) < min_items:
            skipped.append((annotator, len(their_items)))
            continue
        candidates.append(_compare(annotator, their_items, items, judge, similarity, epsilon))

    comparisons = _corrected(candidates, q)
    if comparisons:
        winning_rate = sum(c.judge_wins for c in comparisons) / len(comparisons)
        advantage = float(np.mean([c.judge_win_rate for c in comparisons]))
    else:
        winning_rate = advantage = None
    return AltTestResult(
        epsilon=epsilon,
        q=q,
        n_items=len(items),
        comparisons=comparisons,
        skipped=tuple(skipped),
        winning_rate=winning_rate,
        advantage_probability=advantage,
        min_items=min_items,
    )
