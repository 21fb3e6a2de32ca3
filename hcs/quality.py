"""Quality control as plain functions on arrays: gold comparison, check standing, behaviour
signals, and counts without some annotators.

Nothing here knows about a database. Thresholds live here, once, and every page that shows a
flag shows the threshold it used.

References: Karpinska, Akoury & Iyyer (2021), *The Perils of Using Mechanical Turk to Evaluate
Open-Ended Text Generation*, EMNLP, on why crowd Likert ratings need controls; Wang et al.
(2024), *HelpSteer2*, where filtering careless annotators raised quadratic-weighted κ from
0.47 to 0.71.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

# ------------------------------------------------------------------ thresholds (defaults)
TRAINING_MAX_MAE = 0.75  # mean absolute error over dimensions, averaged over training items
GOLD_TOLERANCE = 1  # a gold dimension is right when the score is within this many points
CHECK_WARN_BELOW = 0.8  # check accuracy under which an annotator is warned
CHECK_BLOCK_BELOW = 0.5  # check accuracy under which an annotator is blocked
CHECK_MIN_ANSWERED = 3  # checks answered before accuracy can warn or block
MIN_SECONDS = 5.0  # an annotation faster than this is "too fast"
FAST_SHARE_FLAG = 0.5  # flag when more than this share of annotations is too fast
STRAIGHT_SHARE_FLAG = 0.5  # flag when more than this share gives every dimension one score
STRAIGHT_RUN_FLAG = 5  # flag when this many consecutive annotations share one score vector
LOO_SPEARMAN_FLAG = 0.2  # flag when agreement with the leave-one-out consensus is below this

OK, WARN, BLOCK = "ok", "warn", "block"


# ------------------------------------------------------------------ gold
@dataclass(frozen=True)
class GoldComparison:
    """One answer against the expert's: which dimensions are off, which flags differ."""

    mae: float  # mean absolute error over the dimensions the expert scored
    off: tuple[str, ...]  # dimensions further than the tolerance from the expert
    differences: dict[str, int]  # own − expert, per dimension
    flags_missing: tuple[str, ...]  # expert set them, the annotator did not
    flags_extra: tuple[str, ...]  # the annotator set them, the expert did not

    @property
    def flags_right(self) -> bool:
        return not self.flags_missing and not self.flags_extra

    @property
    def passed(self) -> bool:
        return not self.off and self.flags_right


def compare_with_gold(
    scores: Mapping[str, int | None],
    gold: Mapping[str, int],
    *,
    tolerance: int = GOLD_TOLERANCE,
    flags: Iterable[str] = (),
    gold_flags: Iterable[str] | None = None,
    compared_flags: Iterable[str] | None = None,
) -> GoldComparison:
    """Compare an annotation with the expert's scores and flags.

    ``gold_flags=None`` means the expert gave no flags to compare. ``compared_flags`` limits the
    comparison to those flags (e.g. the rubric's cap flags); None compares every flag.

    >>> c = compare_with_gold({"a": 3, "b": 5}, {"a": 1, "b": 5}, tolerance=1)
    >>> c.off, c.mae, c.passed
    (('a',), 1.0, False)
    """
    if not gold:
        raise ValueError("the gold answer scores no dimension")
    differences = {}
    for key, expert in gold.items():
        own = scores.get(key)
        # An unrated dimension is as wrong as the furthest score could be; it counts as off.
        differences[key] = (int(own) - int(expert)) if own is not None else None
    gaps = [abs(d) if d is not None else None for d in differences.values()]
    worst = max((g for g in gaps if g is not None), default=0)
    mae = float(np.mean([g if g is not None else max(worst, tolerance + 1) for g in gaps]))
    off = tuple(k for k, d in differences.items() if d is None or abs(d) > tolerance)
    missing: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()
    if gold_flags is not None:
        scope = None if compared_flags is None else set(compared_flags)
        own_set, gold_set = set(flags), set(gold_flags)
        if scope is not None:
            own_set, gold_set = own_set & scope, gold_set & scope
        missing, extra = tuple(sorted(gold_set - own_set)), tuple(sorted(own_set - gold_set))
    return GoldComparison(
        mae=mae, off=off, differences={k: d for k, d in differences.items() if d is not None},
        flags_missing=missing, flags_extra=extra,
    )


def training_passed(maes: Sequence[float], flags_right: Sequence[bool], *, max_mae: float = TRAINING_MAX_MAE) -> bool:
    """The training pass rule: mean of the items' MAE ≤ ``max_mae`` and every cap right.

    >>> training_passed([0.4, 1.0], [True, True])
    True
    >>> training_passed([0.4, 1.2], [True, True])
    False
    >>> training_passed([0.0], [False])
    False
    """
    if len(maes) == 0:
        return False
    return float(np.mean(maes)) <= max_mae and all(flags_right)


def check_standing(
    passed: int,
    failed: int,
    *,
    warn_below: float = CHECK_WARN_BELOW,
    block_below: float = CHECK_BLOCK_BELOW,
    min_answered: int = CHECK_MIN_ANSWERED,
) -> str:
    """``ok``, ``warn`` or ``block`` from the checks an annotator passed and failed.

    Nothing happens before ``min_answered`` checks; then accuracy under ``block_below`` blocks
    and under ``warn_below`` warns.

    >>> check_standing(1, 1), check_standing(2, 1), check_standing(1, 2), check_standing(9, 1)
    ('ok', 'warn', 'block', 'ok')
    """
    total = passed + failed
    if total < max(min_answered, 1):
        return OK
    accuracy = passed / total
    if accuracy < block_below:
        return BLOCK
    if accuracy < warn_below:
        return WARN
    return OK


# ------------------------------------------------------------------ behaviour signals
def seconds_signals(seconds: npt.ArrayLike, *, minimum: float = MIN_SECONDS) -> tuple[float | None, float | None]:
    """Median seconds per item and the share of items (0–1) done in under ``minimum`` seconds.

    NaN entries (no start time, e.g. imported annotations) are ignored.

    >>> seconds_signals([2, 4, 30, float("nan")], minimum=5)
    (4.0, 0.6666666666666666)
    """
    values = np.asarray(seconds, dtype=float)
    values = values[np.isfinite(values)]
    if len(values) == 0:
        return None, None
    return float(np.median(values)), float(np.mean(values < minimum))


def straightlining(scores: npt.ArrayLike) -> tuple[float | None, int]:
    """Share of annotations giving every dimension one score, and the longest run of
    consecutive annotations with identical score vectors.

    ``scores`` is annotations × dimensions in submission order; NaN = not rated. An annotation
    with an unrated dimension is never "all equal" and breaks a run.

    >>> straightlining([[3, 3, 3], [3, 3, 3], [1, 2, 3], [4, 4, 4], [4, 4, 4], [4, 4, 4]])
    (0.8333333333333334, 3)
    """
    matrix = np.asarray(scores, dtype=float)
    if matrix.ndim != 2 or len(matrix) == 0:
        return None, 0
    complete = np.isfinite(matrix).all(axis=1)
    flat = complete & (np.nanmax(matrix, axis=1, initial=-np.inf) == np.nanmin(matrix, axis=1, initial=np.inf))
    same_as_previous = np.zeros(len(matrix), dtype=bool)
    same_as_previous[1:] = complete[1:] & complete[:-1] & (matrix[1:] == matrix[:-1]).all(axis=1)
    longest = run = 1 if complete.any() else 0
    for same, ok in zip(same_as_previous[1:], complete[1:]):
        run = run + 1 if same else (1 if ok else 0)
        longest = max(longest, run)
    return float(flat.mean()), int(longest)


@dataclass(frozen=True)
class Signal:
    """One behaviour flag: its value, the threshold it is compared with, and the verdict."""

    name: str
    value: float | None
    threshold: float
    flagged: bool
    rule: str  # e.g. "> 0.5"


def behaviour_flags(
    *,
    fast_share: float | None,
    straight_share: float | None,
    longest_run: int,
    loo_spearman: float | None,
    gold_accuracy: float | None,
    check_warn_below: float = CHECK_WARN_BELOW,
) -> tuple[Signal, ...]:
    """Each signal with its threshold; ``flagged`` when it crosses it (None never flags)."""

    def signal(name, value, threshold, above: bool) -> Signal:
        flagged = value is not None and (value > threshold if above else value < threshold)
        return Signal(name, value, threshold, bool(flagged), f"{'>' if above else '<'} {threshold:g}")

    return (
        signal("too fast", fast_share, FAST_SHARE_FLAG, True),
        signal("straight-lining", straight_share, STRAIGHT_SHARE_FLAG, True),
        Signal("identical run", float(longest_run), STRAIGHT_RUN_FLAG, longest_run >= STRAIGHT_RUN_FLAG,
               f"\u2265 {STRAIGHT_RUN_FLAG}"),
        signal("low agreement", loo_spearman, LOO_SPEARMAN_FLAG, False),
        signal("gold accuracy", gold_accuracy, check_warn_below, False),
    )


# ------------------------------------------------------------------ counts without some annotators
def count_cube(
    item_index: npt.ArrayLike, scores: npt.ArrayLike, *, n_items: int, levels: Sequence[int],
    keep: npt.ArrayLike | None = None, first_k: int | None = None,
) -> npt.NDArray[np.int64]:
    """Dimensions × items × categories counts from annotation rows (in submission order).

    ``keep`` masks annotations (False = left out, e.g. an excluded annotator's). With
    ``first_k``, only the first k kept ratings of each item × dimension count, and items with
    fewer than k are zeroed: the table Fleiss' κ takes.

    >>> count_cube([0, 0, 1], [[1], [2], [2]], n_items=2, levels=[1, 2])[0].tolist()
    [[1, 1], [0, 1]]
    """
    items = np.asarray(item_index, dtype=np.int64)
    matrix = np.asarray(scores, dtype=float)
    if matrix.ndim == 1:
        matrix = matrix[:, None]
    mask = np.ones(len(items), dtype=bool) if keep is None else np.asarray(keep, dtype=bool)
    lo = levels[0]
    out = np.zeros((matrix.shape[1], n_items, len(levels)), dtype=np.int64)
    for j in range(matrix.shape[1]):
        rated = mask & np.isfinite(matrix[:, j])
        idx = np.flatnonzero(rated)
        it = items[idx]
        if first_k is not None:
            order = np.argsort(it, kind="stable")  # stable: submission order kept within an item
            sorted_items = it[order]
            starts = np.searchsorted(sorted_items, sorted_items, side="left")
            rank = np.empty(len(it), dtype=np.int64)
            rank[order] = np.arange(len(it)) - starts
            idx, it = idx[rank < first_k], it[rank < first_k]
        cat = matrix[idx, j].astype(np.int64) - lo
        np.add.at(out[j], (it, cat), 1)
        if first_k is not None:
            out[j][out[j].sum(axis=1) != first_k] = 0
    return out


# ------------------------------------------------------------------ agreement with a reference label
def agreement_with_reference(own: npt.ArrayLike, reference: npt.ArrayLike) -> tuple[int, float | None, float | None]:
    """Annotations × dimensions against the reference (e.g. adjudicated) scores of the same items:
    how many annotations, the share of dimension scores equal to the reference, and the mean
    absolute difference. NaN cells (unrated) are left out.

    >>> agreement_with_reference([[3, 4], [5, 5]], [[3, 5], [5, 5]])
    (2, 0.75, 0.25)
    """
    a = np.asarray(own, dtype=float)
    r = np.asarray(reference, dtype=float)
    if a.shape != r.shape:
        raise ValueError(f"own scores {a.shape} and reference {r.shape} differ in shape")
    ok = np.isfinite(a) & np.isfinite(r)
    if not ok.any():
        return 0, None, None
    diff = np.abs(a - r)[ok]
    return int(ok.any(axis=1).sum()), float(np.mean(diff == 0)), float(np.mean(diff))
