"""Quality control as plain functions on arrays: gold comparison, check standing, behaviour
signals, and counts without some annotators.

Nothing here knows about a database. The thresholds, the gold comparison and the check standing
are defined in ``hcs.quality_rules`` (no numpy, for the rating pages) and re-exported here.

References: Karpinska, Akoury & Iyyer (2021), *The Perils of Using Mechanical Turk to Evaluate
Open-Ended Text Generation*, EMNLP, on why crowd Likert ratings need controls; Wang et al.
(2024), *HelpSteer2*, where filtering careless annotators raised quadratic-weighted κ from
0.47 to 0.71.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from hcs.quality_rules import (  # noqa: F401 (re-exported: hcs.quality is the whole quality API)
    BLOCK,
    CHECK_BLOCK_BELOW,
    CHECK_MIN_ANSWERED,
    CHECK_WARN_BELOW,
    FAST_SHARE_FLAG,
    GOLD_TOLERANCE,
    LOO_SPEARMAN_FLAG,
    MIN_SECONDS,
    MIN_SHARED_ITEMS,
    OK,
    STRAIGHT_RUN_FLAG,
    STRAIGHT_SHARE_FLAG,
    TRAINING_MAX_MAE,
    WARN,
    GoldComparison,
    check_standing,
    compare_with_gold,
    training_passed,
)


# ------------------------------------------------------------------ behaviour signals
def seconds_signals(
    seconds: npt.ArrayLike, *, minimum: float = MIN_SECONDS
) -> tuple[float | None, float | None]:
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
    flat = complete & (
        np.nanmax(matrix, axis=1, initial=-np.inf) == np.nanmin(matrix, axis=1, initial=np.inf)
    )
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
    loo_n: int | None = None,
) -> tuple[Signal, ...]:
    """Each signal with its threshold; ``flagged`` when it crosses it (None never flags).

    ``loo_n``: the items behind ``loo_spearman``; fewer than ``MIN_SHARED_ITEMS`` never flag.
    """

    def signal(name, value, threshold, above: bool) -> Signal:
        flagged = value is not None and (value > threshold if above else value < threshold)
        return Signal(name, value, threshold, bool(flagged), f"{'>' if above else '<'} {threshold:g}")

    return (
        signal("too fast", fast_share, FAST_SHARE_FLAG, True),
        signal("straight-lining", straight_share, STRAIGHT_SHARE_FLAG, True),
        Signal(
            "identical run",
            float(longest_run),
            STRAIGHT_RUN_FLAG,
            longest_run >= STRAIGHT_RUN_FLAG,
            f"\u2265 {STRAIGHT_RUN_FLAG}",
        ),
        _low_agreement(signal("low agreement", loo_spearman, LOO_SPEARMAN_FLAG, False), loo_n),
        signal("gold accuracy", gold_accuracy, check_warn_below, False),
    )


def _low_agreement(signal: Signal, n: int | None) -> Signal:
    if n is None:
        return signal
    rule = f"{signal.rule} on \u2265 {MIN_SHARED_ITEMS} shared items"
    return Signal(signal.name, signal.value, signal.threshold, signal.flagged and n >= MIN_SHARED_ITEMS, rule)


# ------------------------------------------------------------------ counts without some annotators
def count_cube(
    item_index: npt.ArrayLike,
    scores: npt.ArrayLike,
    *,
    n_items: int,
    levels: Sequence[int],
    keep: npt.ArrayLike | None = None,
    first_k: int | None = None,
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
def agreement_with_reference(
    own: npt.ArrayLike, reference: npt.ArrayLike
) -> tuple[int, float | None, float | None]:
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
