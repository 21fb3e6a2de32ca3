"""Quality-control rules on plain numbers: the thresholds, gold comparison and check standing.

The part of ``hcs.quality`` that needs no arrays (and so no numpy): what a rating request needs to
judge a training or check answer, and what the batch's quality settings take as defaults.
``hcs.quality`` re-exports all of it. Thresholds live here, once, and every page that shows a flag
shows the threshold it used.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

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
# Below 10 shared items Spearman's ρ must pass ±0.65 merely to differ from chance at the 5 % level
# (Zar 1972, Table 1: 0.648 for n = 10), so a ρ or a bias from fewer items flags no one.
MIN_SHARED_ITEMS = 10
EVERY_N = 50  # annotations per window of agreement over time (hcs.drift), unless the caller says otherwise

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
    mae = _mean([g if g is not None else max(worst, tolerance + 1) for g in gaps])
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
        mae=mae,
        off=off,
        differences={k: d for k, d in differences.items() if d is not None},
        flags_missing=missing,
        flags_extra=extra,
    )


def training_passed(
    maes: Sequence[float], flags_right: Sequence[bool], *, max_mae: float = TRAINING_MAX_MAE
) -> bool:
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
    return _mean(maes) <= max_mae and all(flags_right)


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


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)
