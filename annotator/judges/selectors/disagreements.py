"""Why a judge disagrees: the items where its score is farthest from the human mean, with its reason beside
the people's comments. For researchers only; annotators never see a judge's scores."""

from __future__ import annotations

import math
from dataclasses import dataclass

from annotator.judges.models.judge import OVERALL
from annotator.judges.selectors.judges import human_item_mean
from annotator.models import Annotation, Batch, Judge, JudgeScore, Score
from annotator.reports.selectors.batch_report import report_arrays

MAX_ROWS = 50


@dataclass(frozen=True)
class HumanView:
    annotator: str
    score: int | None  # on this dimension (None for the overall HCS)
    comment: str


@dataclass(frozen=True)
class Disagreement:
    item_pk: int
    item_id: str
    system_id: str
    dimension: str
    judge_value: float
    human_mean: float
    judge_reason: str
    humans: tuple[HumanView, ...]

    @property
    def difference(self) -> float:
        return self.judge_value - self.human_mean


def judge_dimensions(*, batch: Batch, judge: Judge) -> list[str]:
    keys = set(
        JudgeScore.objects.filter(judge=judge, item__batch=batch)
        .values_list("dimension", flat=True)
        .distinct()
    )
    return [k for k in (*batch.rubric_obj.dimension_keys, OVERALL) if k in keys]


def judge_systems(*, batch: Batch, judge: Judge) -> list[str]:
    return sorted(
        set(
            JudgeScore.objects.filter(judge=judge, item__batch=batch).values_list(
                "item__system_id", flat=True
            )
        )
    )


def judge_disagreements(
    *, batch: Batch, judge: Judge, dimension: str = "", system: str = "", limit: int = MAX_ROWS
) -> list[Disagreement]:
    """The ``limit`` judge scores farthest from the human mean (largest |judge − mean| first)."""
    arrays = report_arrays(batch=batch)
    row_of_pk = {int(pk): row for row, pk in enumerate(arrays.item_pk)}
    scores = JudgeScore.objects.filter(judge=judge, item__batch=batch)
    if dimension:
        scores = scores.filter(dimension=dimension)
    if system:
        scores = scores.filter(item__system_id=system)
    means: dict[str, object] = {}
    rows = []
    for item_pk, item_id, system_id, dim, value, reason in scores.values_list(
        "item", "item__item_id", "item__system_id", "dimension", "value", "reason"
    ):
        if dim not in means:
            means[dim] = human_item_mean(batch, arrays, dim)
        mean = float(means[dim][row_of_pk[item_pk]])
        if math.isfinite(mean):
            rows.append((abs(value - mean), item_pk, item_id, system_id, dim, value, mean, reason))
    rows.sort(key=lambda r: (-r[0], r[2], r[4]))
    rows = rows[:limit]
    items = {r[1] for r in rows}
    comments = {
        (item, name): comment
        for item, name, comment in Annotation.objects.filter(item__in=items).values_list(
            "item", "annotator__username", "comment"
        )
    }
    given = {
        (item, name, dim): value
        for item, name, dim, value in Score.objects.filter(annotation__item__in=items).values_list(
            "annotation__item", "annotation__annotator__username", "dimension", "value"
        )
    }
    return [
        Disagreement(
            item_pk=item_pk,
            item_id=item_id,
            system_id=system_id,
            dimension=dim,
            judge_value=value,
            human_mean=mean,
            judge_reason=reason,
            humans=tuple(
                HumanView(name, given.get((item_pk, name, dim)), comments[(i, name)])
                for (i, name) in sorted(comments)
                if i == item_pk
            ),
        )
        for _, item_pk, item_id, system_id, dim, value, mean, reason in rows
    ]
