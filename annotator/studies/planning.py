"""Plan a study from a batch used as a pilot: the report's arrays → ``hcs.planning`` → one plan.

The pilot is the batch's annotations without excluded annotators (the report's own arrays), so a plan
predicts the widths the report will show. Judges contribute, per judge: the human labels a PPI++
interval of the target width needs (per dimension and overall HCS) and the items the alt-test needs
to pass with power 0.8 at the margin ε, on overall HCS (the judge's own overall score, or its dimension
scores weighted as the rubric says).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from annotator.counted import counted
from annotator.judges.models.judge import OVERALL
from annotator.judges.selectors.judges import human_item_mean, human_ratings
from annotator.judges.selectors.validation import judge_overall_scores
from annotator.models import Batch, JudgeScore
from annotator.reports.selectors.arrays import ReportArrays
from hcs.calibration.alt_test import DEFAULT_EPSILON
from hcs.planning import (
    ALT_TEST_SIZES,
    StatisticPlan,
    alt_test_items_for_power,
    plan_agreement,
    plan_mean,
    ppi_labels_for_width,
)
from hcs.scoring import overall_per_annotation

MAX_ITEMS = 10_000_000
MAX_K = 100


class PlanError(ValueError):
    """Plan parameters or a pilot that cannot give a plan; the message says what to change."""


@dataclass(frozen=True)
class JudgePlan:
    ppi_labels: dict[str, int | None]  # dimension → labels for a PPI++ interval of the target width
    alt_test_items: int | None  # items (each rated by k people) for power 0.8 on overall HCS
    k: int
    epsilon: float
    target_width: float | None
    items: int = 0  # the planned study's items: a PPI++ label count is looked for up to it

    # The command and the Plan panel say a target no size reaches in these words, so they agree.
    def alt_test_text(self) -> str:
        if self.alt_test_items is None:
            return f"no size reaches it (up to {counted(ALT_TEST_SIZES[-1], 'item', 'items', grouped=True)} tried)"
        n = self.alt_test_items
        return f"{counted(n, 'item', 'items')} ({counted(n * self.k, 'label', 'labels')})"

    def ppi_label_texts(self) -> list[tuple[str, str]]:
        """(dimension, labels needed or why none) per dimension; empty without a target width."""
        if self.target_width is None:
            return []
        unreached = (
            f"no size reaches it (not even all {counted(self.items, 'item', 'items', grouped=True)} labelled)"
        )
        return [(d, unreached if n is None else str(n)) for d, n in self.ppi_labels.items()]

    def to_json(self) -> dict[str, Any]:
        return {
            "alt_test": {
                "epsilon": self.epsilon,
                "power": 0.8,
                "dimension": OVERALL,
                "items_needed": self.alt_test_items,
                "labels_needed": None if self.alt_test_items is None else self.alt_test_items * self.k,
            },
            "ppi": {"target_width": self.target_width, "labels_needed": dict(self.ppi_labels)},
        }


@dataclass(frozen=True)
class StudyPlan:
    batch: str
    pilot_items: int
    items: int
    k: int
    target_width: float | None
    dimensions: dict[str, dict[str, StatisticPlan]]
    labels: dict[str, str]
    judges: dict[str, JudgePlan] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "batch": self.batch,
            "pilot_items": self.pilot_items,
            "items": self.items,
            "k": self.k,
            "target_width": self.target_width,
            "dimensions": {
                d: {key: p.to_json() for key, p in stats.items()} for d, stats in self.dimensions.items()
            },
            "judges": {name: plan.to_json() for name, plan in self.judges.items()},
        }

    def rows(self) -> list[tuple[str, str, StatisticPlan]]:
        """(dimension label, statistic, plan) for a table."""
        return [
            (self.labels.get(d, d), key, p)
            for d, stats in self.dimensions.items()
            for key, p in stats.items()
        ]


def parse_plan_request(*, items, k, target_width) -> tuple[int, int, float | None]:
    """Items, k and the target width from a form, a query or the command line, or a PlanError."""
    try:
        n = int(str(items).strip())
        kk = int(str(k).strip())
    except (TypeError, ValueError):
        raise PlanError(f"items and k must be whole numbers, not {items!r} and {k!r}") from None
    if not 2 <= n <= MAX_ITEMS:
        raise PlanError(f"items must lie between 2 and {MAX_ITEMS:,}, not {n}")
    if not 2 <= kk <= MAX_K:
        raise PlanError(f"k (annotators per item) must lie between 2 and {MAX_K}, not {kk}")
    width = None
    if target_width not in (None, ""):
        try:
            width = float(str(target_width).strip())
        except ValueError:
            raise PlanError(f"the target width must be a number such as 0.1, not {target_width!r}") from None
        if not (0 < width < 100):
            raise PlanError(
                f"the target width must be positive (a CI width on the statistic's scale), not {width:g}"
            )
    return n, kk, width


def _slots(arrays: ReportArrays, values: np.ndarray) -> np.ndarray:
    """items × ratings matrix of ``values`` (one per annotation, grouped by item); NaN where none."""
    item = arrays.annotation_item
    n_items = len(arrays.item_pk)
    if not len(item):
        return np.full((n_items, 0), np.nan)
    starts = np.r_[0, np.flatnonzero(item[1:] != item[:-1]) + 1]
    slot = np.arange(len(item)) - np.repeat(starts, np.diff(np.r_[starts, len(item)]))
    out = np.full((n_items, int(slot.max()) + 1), np.nan)
    out[item, slot] = values
    return out


def study_plan(
    *,
    batch: Batch,
    arrays: ReportArrays,
    items: int,
    k: int,
    target_width: float | None = None,
    epsilon: float = DEFAULT_EPSILON,
    seed: int = 0,
) -> StudyPlan:
    """Predicted 95 % CI widths for ``items`` × ``k`` from ``batch`` as a pilot (``arrays``: the report's)."""
    rubric = batch.rubric_obj
    scores = arrays.annotation_scores
    pilot = int((np.bincount(arrays.annotation_item, minlength=len(arrays.item_pk)) >= 2).sum())
    if pilot < 10:
        raise PlanError(
            f"Batch {batch.name!r} has {counted(pilot, 'item', 'items')} rated by two or more people; a pilot needs at least 10."
        )
    dimensions: dict[str, dict[str, StatisticPlan]] = {}
    cats = list(rubric.levels)
    for j, key in enumerate(rubric.dimension_keys):
        matrix = _slots(arrays, scores[:, j])
        if (np.isfinite(matrix).sum(axis=1) >= 2).sum() < 2:
            continue
        dimensions[key] = plan_agreement(
            matrix, cats, n_items=items, k=k, target_width=target_width, seed=seed + j
        )
    weights = np.array([d.weight for d in rubric.dimensions])
    overall = _slots(arrays, overall_per_annotation(scores, weights))
    if (np.isfinite(overall).sum(axis=1) >= 2).sum() >= 2:
        dimensions[OVERALL] = {
            "hcs_mean": plan_mean(overall, n_items=items, k=k, target_width=target_width, seed=seed)
        }
    labels = {**{d.key: d.label for d in rubric.dimensions}, OVERALL: "Overall HCS"}
    return StudyPlan(
        batch=batch.name,
        pilot_items=pilot,
        items=items,
        k=k,
        target_width=target_width,
        dimensions=dimensions,
        labels=labels,
        judges=_judge_plans(batch, arrays, items, k, target_width, epsilon, seed),
    )


def _judge_plans(
    batch: Batch,
    arrays: ReportArrays,
    items: int,
    k: int,
    target_width: float | None,
    epsilon: float,
    seed: int,
) -> dict[str, JudgePlan]:
    row_of_pk = {int(pk): row for row, pk in enumerate(arrays.item_pk)}
    by_judge: dict[str, dict[str, dict[int, float]]] = {}
    for name, dimension, item, value in JudgeScore.objects.filter(item__batch=batch).values_list(
        "judge__name", "dimension", "item", "value"
    ):
        by_judge.setdefault(name, {}).setdefault(dimension, {})[row_of_pk[item]] = value
    weights = {d.key: d.weight for d in batch.rubric_obj.dimensions}
    human_mean: dict[str, np.ndarray] = {}
    plans = {}
    for name in sorted(by_judge):
        mine = by_judge[name]
        if OVERALL not in mine and (derived := judge_overall_scores(mine, weights)):
            mine[OVERALL] = derived
        labels = {}
        for dimension in (*batch.rubric_obj.dimension_keys, OVERALL):
            judged = mine.get(dimension)
            if not judged:
                continue
            if dimension not in human_mean:
                human_mean[dimension] = human_item_mean(batch, arrays, dimension)
            h = human_mean[dimension]
            rows = np.array(sorted(judged))
            f = np.array([judged[r] for r in rows])
            labelled = np.isfinite(h[rows])
            labels[dimension] = (
                None
                if target_width is None
                else ppi_labels_for_width(
                    h[rows][labelled], f[labelled], f[~labelled], n_items=items, width=target_width
                )
            )
        alt_items = None
        if mine.get(OVERALL):
            alt_items = alt_test_items_for_power(
                human_ratings(batch, arrays, OVERALL), mine[OVERALL], epsilon=epsilon, seed=seed
            )
        plans[name] = JudgePlan(
            ppi_labels=labels,
            alt_test_items=alt_items,
            k=k,
            epsilon=epsilon,
            target_width=target_width,
            items=items,
        )
    return plans
