"""Judge calibration for a batch report: database rows → ``hcs.calibration`` → a frozen section.

Registered with the report selector as the sections ``"judges"`` (per judge × dimension) and
``"judge_pairwise"`` (pairwise verdicts against the human preference). The human side comes from the
report's arrays, so judges are read against exactly the annotations the report shows.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from django.db.models import Count

from annotator.models import Batch, Judge, JudgeFailure, JudgeScore, PairwiseVerdict
from annotator.models.judge import OVERALL
from annotator.selectors.reports import ReportArrays, register_report_section
from hcs.calibration import (
    JudgeCalibration,
    PairwiseComparison,
    calibrate_judge,
    compare_verdicts,
    human_preference,
)
from hcs.calibration.alt_test import DEFAULT_EPSILON
from hcs.scoring import item_summaries, overall_per_annotation

_EPSILON: contextvars.ContextVar[float] = contextvars.ContextVar("alt_test_epsilon", default=DEFAULT_EPSILON)


@contextlib.contextmanager
def alt_test_epsilon(epsilon: float) -> Iterator[None]:
    """Reports built inside this block run the alt-test with margin ``epsilon`` (``export_report --epsilon``)."""
    if not 0 <= epsilon < 1:
        raise ValueError(f"epsilon must lie in [0, 1), not {epsilon}")
    token = _EPSILON.set(epsilon)
    try:
        yield
    finally:
        _EPSILON.reset(token)


def _r(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(float(value), digits)


@dataclass(frozen=True)
class JudgeDimensionRow:
    judge: str
    dimension: str
    label: str
    scales: tuple[str, ...]  # declared raw scales seen for this judge × dimension
    calibration: JudgeCalibration

    def to_json(self) -> dict[str, Any]:
        c, alt = self.calibration, self.calibration.alt_test
        return {
            "n": c.n,
            "spearman": _r(c.spearman),
            "spearman_ci95": [_r(c.spearman_ci95[0]), _r(c.spearman_ci95[1])],
            "kendall": _r(c.kendall),
            "kendall_ci95": [_r(c.kendall_ci95[0]), _r(c.kendall_ci95[1])],
            "pearson": _r(c.pearson),
            "mae": _r(c.mae),
            "bias": _r(c.bias),
            "qwk": _r(c.qwk),
            "human_ceiling_spearman": _r(c.human_ceiling_spearman),
            "human_ceiling_kendall": _r(c.human_ceiling_kendall),
            "alpha_humans": _r(c.alpha_humans),
            "alpha_humans_plus_judge": _r(c.alpha_with_judge),
            "possibly_inverted": c.possibly_inverted,
            "confusion": c.confusion,
            "raw_scales": list(self.scales),
            "alt_test": {
                "winning_rate": _r(alt.winning_rate),
                "advantage_probability": _r(alt.advantage_probability),
                "passed": alt.passed,
                "epsilon": alt.epsilon,
                "q": alt.q,
                "n_items": alt.n_items,
                "annotators_tested": len(alt.comparisons),
                "annotators_skipped": len(alt.skipped),
                "verdict": alt.verdict,
            },
        }


@dataclass(frozen=True)
class JudgesSection:
    template: ClassVar[str] = "annotator/_report_judges.html"

    epsilon: float
    judges: tuple[dict[str, Any], ...]  # name, model, template, template_version, n_scores, n_failures
    rows: tuple[JudgeDimensionRow, ...]

    def __bool__(self) -> bool:
        return bool(self.judges)

    def for_judge(self, name: str) -> list[JudgeDimensionRow]:
        return [r for r in self.rows if r.judge == name]

    def to_json(self) -> dict[str, dict[str, dict[str, Any]]]:
        out: dict[str, dict[str, dict[str, Any]]] = {j["name"]: {} for j in self.judges}
        for row in self.rows:
            out[row.judge][row.dimension] = row.to_json()
        return out


def _human_overall(batch: Batch, arrays: ReportArrays) -> np.ndarray:
    weights = np.array([d.weight for d in batch.rubric_obj.dimensions])
    return overall_per_annotation(arrays.annotation_scores, weights)


def _human_ratings(arrays: ReportArrays, values: np.ndarray) -> dict[int, dict[int, float]]:
    """{item row: {annotator index: value}} for the annotations with a value."""
    ratings: dict[int, dict[int, float]] = {}
    ok = np.isfinite(values)
    for item, annotator, value in zip(arrays.annotation_item[ok], arrays.annotation_annotator[ok], values[ok]):
        ratings.setdefault(int(item), {})[int(annotator)] = float(value)
    return ratings


def judges_report(*, batch: Batch, arrays: ReportArrays, epsilon: float | None = None, n_boot: int = 1000,
                  seed: int = 0) -> JudgesSection:
    epsilon = _EPSILON.get() if epsilon is None else epsilon
    rubric = batch.rubric_obj
    judges = list(
        Judge.objects.filter(scores__item__batch=batch).distinct().order_by("name")
        .values("pk", "name", "model", "template", "template_version")
    )
    counts = dict(
        JudgeScore.objects.filter(item__batch=batch).values("judge").annotate(n=Count("id")).values_list("judge", "n")
    )
    failures = dict(
        JudgeFailure.objects.filter(item__batch=batch).values("judge").annotate(n=Count("id")).values_list("judge", "n")
    )
    row_of_pk = {int(pk): row for row, pk in enumerate(arrays.item_pk)}
    dimension_index = {key: j for j, key in enumerate(rubric.dimension_keys)}
    human_cache: dict[str, dict[int, dict[int, float]]] = {}
    scores: dict[tuple[int, str], dict[int, float]] = {}
    scales: dict[tuple[int, str], set[str]] = {}
    for judge_pk, dimension, item_pk, value, lo, hi, higher in JudgeScore.objects.filter(item__batch=batch).values_list(
        "judge", "dimension", "item", "value", "scale_min", "scale_max", "higher_is_better"
    ):
        scores.setdefault((judge_pk, dimension), {})[row_of_pk[item_pk]] = value
        scales.setdefault((judge_pk, dimension), set()).add(f"{lo:g}–{hi:g}" + ("" if higher else " (lower is better)"))
    rows = []
    for judge in judges:
        judge["n_scores"] = counts.get(judge["pk"], 0)
        judge["n_failures"] = failures.get(judge["pk"], 0)
        for dimension in (*rubric.dimension_keys, OVERALL):
            judged = scores.get((judge["pk"], dimension))
            if not judged:
                continue
            if dimension not in human_cache:
                values = (
                    _human_overall(batch, arrays) if dimension == OVERALL
                    else arrays.annotation_scores[:, dimension_index[dimension]]
                )
                human_cache[dimension] = _human_ratings(arrays, values)
            calibration = calibrate_judge(human_cache[dimension], judged, epsilon=epsilon, n_boot=n_boot, seed=seed)
            label = "Overall HCS" if dimension == OVERALL else rubric.dimension(dimension).label
            rows.append(JudgeDimensionRow(judge["name"], dimension, label, tuple(sorted(scales[(judge["pk"], dimension)])), calibration))
    return JudgesSection(epsilon=epsilon, judges=tuple(judges), rows=tuple(rows))


@dataclass(frozen=True)
class PairwiseRow:
    judge: str
    comparison: PairwiseComparison

    def to_json(self) -> dict[str, Any]:
        c = self.comparison
        return {
            "n": c.n,
            "agreement": _r(c.agreement),
            "kappa": _r(c.kappa),
            "confident_threshold": c.confident_threshold,
            "n_confident": c.n_confident,
            "confident_accuracy": _r(c.confident_accuracy),
            "table": c.table,
        }


@dataclass(frozen=True)
class PairwiseSection:
    template: ClassVar[str] = "annotator/_report_judge_pairwise.html"

    rows: tuple[PairwiseRow, ...]

    def __bool__(self) -> bool:
        return bool(self.rows)

    def to_json(self) -> dict[str, dict[str, Any]]:
        return {row.judge: row.to_json() for row in self.rows}


def pairwise_report(*, batch: Batch, arrays: ReportArrays) -> PairwiseSection:
    verdicts = list(
        PairwiseVerdict.objects.filter(baseline__batch=batch)
        .values_list("judge__name", "baseline", "enhanced", "winner", "confidence")
        .order_by("judge__name", "id")
    )
    if not verdicts:
        return PairwiseSection(rows=())
    mean = item_summaries(arrays.annotation_item, _human_overall(batch, arrays), n_items=len(arrays.item_pk)).mean
    row_of_pk = {int(pk): row for row, pk in enumerate(arrays.item_pk)}
    by_judge: dict[str, tuple[list[str], list[str], list[float | None]]] = {}
    for judge, baseline, enhanced, winner, confidence in verdicts:
        b, e = mean[row_of_pk[baseline]], mean[row_of_pk[enhanced]]
        if not (np.isfinite(b) and np.isfinite(e)):
            continue  # people have not rated both items yet
        j, h, c = by_judge.setdefault(judge, ([], [], []))
        j.append(winner)
        h.append(human_preference(float(b), float(e)))
        c.append(confidence)
    return PairwiseSection(rows=tuple(PairwiseRow(name, compare_verdicts(j, h, c)) for name, (j, h, c) in by_judge.items()))


register_report_section(
    "judges",
    lambda batch, arrays, report: judges_report(
        batch=batch, arrays=arrays, n_boot=report.n_resamples, seed=report.seed
    ),
)
register_report_section("judge_pairwise", lambda batch, arrays, report: pairwise_report(batch=batch, arrays=arrays))
