"""Judge versions side by side on the batch's frozen calibration set, in the order they were made.

Each version is calibrated (``hcs.calibration.calibrate_judge``) on the set's items only, against
the same human ratings as the report (excluded annotators left out), so two versions are compared on
exactly the same items and people. A version that has not scored every item of the set says so:
``run_judge --calibration-set`` completes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from annotator.judges.models.judge import OVERALL
from annotator.judges.selectors.judges import human_ratings
from annotator.models import Batch, CalibrationSet, Judge, JudgeScore
from annotator.reports.selectors.arrays import ReportArrays
from hcs.calibration import JudgeCalibration, calibrate_judge
from hcs.calibration.alt_test import DEFAULT_EPSILON, RECOMMENDED_ITEMS
from hcs.numbers import finite_or_none


def calibration_set_of(batch: Batch) -> CalibrationSet | None:
    return CalibrationSet.objects.filter(batch=batch).select_related("marked_by").first()


def set_item_ids(chosen: CalibrationSet) -> list[str]:
    """The set's item ids in the batch's order."""
    return list(chosen.items.order_by("position", "id").values_list("item_id", flat=True))


def judge_families(batch: Batch) -> list[tuple[str, Judge, int]]:
    """The judges with scores in ``batch``, one row per judge and its versions: (name, newest version,
    number of versions), by name."""
    families: dict[str, list[Judge]] = {}
    for judge in Judge.objects.filter(scores__item__batch=batch).distinct().order_by("created_at", "pk"):
        families.setdefault(judge.base_name, []).append(judge)
    return [(name, versions[-1], len(versions)) for name, versions in sorted(families.items())]


def set_facts(chosen: CalibrationSet, n_items: int) -> dict[str, Any]:
    return {
        "fingerprint": chosen.fingerprint,
        "n_items": n_items,
        "how": chosen.how,
        "note": chosen.note,
        "frozen_at": chosen.frozen_at.isoformat(),
        "marked_by": chosen.marked_by.get_username() if chosen.marked_by else None,
    }


@dataclass(frozen=True)
class VersionOnSet:
    judge: Judge
    current: bool
    scored: int  # items of the set this version has a score for (any dimension)
    calibration: dict[str, JudgeCalibration]  # dimension → on the set's items

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.judge.name,
            "current": self.current,
            "created_at": self.judge.created_at.isoformat(),
            "model": self.judge.model,
            "template_version": self.judge.template_version,
            "template_hash": self.judge.template_hash,
            "items_scored": self.scored,
            "dimensions": {
                d: {
                    "n": c.n,
                    "spearman": finite_or_none(c.spearman),
                    "spearman_ci95": [finite_or_none(c.spearman_ci95[0]), finite_or_none(c.spearman_ci95[1])],
                    "mae": finite_or_none(c.mae),
                    "bias": finite_or_none(c.bias),
                    "human_ceiling_spearman": finite_or_none(c.human_ceiling_spearman),
                    "alt_test_passed": c.alt_test.outcome,
                    "alt_test_winning_rate": finite_or_none(c.alt_test.winning_rate),
                }
                for d, c in self.calibration.items()
            },
        }


@dataclass(frozen=True)
class SetCalibration:
    chosen: CalibrationSet
    n_items: int
    n_rated: int  # items of the set people have rated
    labels: dict[str, str]  # dimension → label, in rubric order (then overall)
    versions: tuple[VersionOnSet, ...]  # oldest first

    @property
    def dimensions(self) -> list[str]:
        seen = {d for v in self.versions for d in v.calibration}
        return [d for d in self.labels if d in seen]

    def table(self) -> list[tuple[VersionOnSet, list[JudgeCalibration | None]]]:
        """One row per version: its calibration per dimension, in ``dimensions`` order (None = not scored)."""
        return [(v, [v.calibration.get(d) for d in self.dimensions]) for v in self.versions]

    @property
    def headers(self) -> list[str]:
        return [self.labels[d] for d in self.dimensions]

    @property
    def small(self) -> bool:
        return self.n_items < RECOMMENDED_ITEMS

    def series(self) -> tuple[list[str], dict[str, list[float | None]]]:
        """Spearman ρ per dimension, one value per version (oldest first): the over-time plot."""
        names = [f"v{n} {v.judge.created_at:%Y-%m-%d}" for n, v in enumerate(self.versions, 1)]
        return names, {
            self.labels[d]: [
                finite_or_none(v.calibration[d].spearman) if d in v.calibration else None
                for v in self.versions
            ]
            for d in self.dimensions
        }

    def to_json(self) -> dict[str, Any]:
        return {
            **set_facts(self.chosen, self.n_items),
            "n_items_rated_by_people": self.n_rated,
            "versions": [v.to_json() for v in self.versions],
        }


def set_calibration(
    *,
    batch: Batch,
    arrays: ReportArrays,
    versions: Sequence[Judge],
    current: Judge | None = None,
    epsilon: float = DEFAULT_EPSILON,
    n_boot: int = 1000,
    seed: int = 0,
) -> SetCalibration | None:
    """Each of ``versions`` calibrated on the batch's calibration set; None when the batch has none."""
    chosen = calibration_set_of(batch)
    if chosen is None:
        return None
    in_set = set(chosen.items.values_list("pk", flat=True))
    row_of_pk = {int(pk): row for row, pk in enumerate(arrays.item_pk)}
    rows = {row_of_pk[pk] for pk in in_set if pk in row_of_pk}
    rubric = batch.rubric_obj
    labels = {**{d.key: d.label for d in rubric.dimensions}, OVERALL: "Overall HCS"}
    scores: dict[tuple[int, str], dict[int, float]] = {}
    scored: dict[int, set[int]] = {}
    for judge_pk, dimension, item_pk, value in JudgeScore.objects.filter(
        judge__in=list(versions), item__in=in_set
    ).values_list("judge", "dimension", "item", "value"):
        if dimension in labels:
            scores.setdefault((judge_pk, dimension), {})[row_of_pk[item_pk]] = value
            scored.setdefault(judge_pk, set()).add(item_pk)
    scored_dimensions = {d for _, d in scores}
    humans = {
        d: {row: r for row, r in human_ratings(batch, arrays, d).items() if row in rows}
        for d in labels
        if d in scored_dimensions
    }
    out = []
    for judge in sorted(versions, key=lambda j: (j.created_at, j.pk)):
        calibration = {
            d: calibrate_judge(
                humans[d],
                scores[(judge.pk, d)],
                epsilon=epsilon,
                n_boot=n_boot,
                seed=seed,
                scale=(rubric.scale_min, rubric.scale_max),
            )
            for d in labels
            if (judge.pk, d) in scores
        }
        out.append(
            VersionOnSet(
                judge=judge,
                current=current is not None and judge.pk == current.pk,
                scored=len(scored.get(judge.pk, ())),
                calibration=calibration,
            )
        )
    n_rated = len(rows & {int(row) for row in arrays.annotation_item})
    return SetCalibration(
        chosen=chosen, n_items=len(in_set), n_rated=n_rated, labels=labels, versions=tuple(out)
    )
