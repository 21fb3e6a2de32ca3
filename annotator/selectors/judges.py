"""Judge calibration for a batch report: database rows → ``hcs.calibration`` → a frozen section.

``batch_report`` calls these for its sections ``"judges"`` (per judge × dimension) and
``"judge_pairwise"`` (pairwise verdicts against the human preference). The human side comes from the
report's arrays, so judges are read against exactly the annotations the report shows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from django.db.models import Count

from annotator.judges.validation import JudgePPI, judge_overall_scores, judge_ppi
from annotator.models import Batch, Judge, JudgeFailure, JudgeScore, PairwiseVerdict
from annotator.models.judge import OVERALL
from annotator.selectors.judge_probes import (
    DimensionProbes,
    PositionResult,
    dimension_probes,
    item_lengths,
    judge_samples,
    position_results,
)
from annotator.selectors.report_arrays import ReportArrays
from hcs.calibration import (
    JudgeCalibration,
    PairwiseComparison,
    calibrate_judge,
    compare_verdicts,
    human_preference,
)
from hcs.calibration.alt_test import DEFAULT_EPSILON
from hcs.calibration.confidence import Reliability, reliability
from hcs.scoring import item_summaries, overall_per_annotation


def _r(value: float | None) -> float | None:
    """A statistic as a plain float at full precision (machine-readable exports never round; pages do)."""
    return None if value is None else float(value)


@dataclass(frozen=True)
class JudgeDimensionRow:
    judge: str
    dimension: str
    label: str
    scales: tuple[str, ...]  # declared raw scales seen for this judge × dimension
    calibration: JudgeCalibration
    probes: DimensionProbes | None = None

    def to_json(self) -> dict[str, Any]:
        c, alt = self.calibration, self.calibration.alt_test
        return {
            **(self.probes.to_json() if self.probes else {}),
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
                "passed": alt.outcome,  # null: not testable
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
    positions: dict[str, PositionResult] = field(default_factory=dict)  # pairwise judges run in both orders
    ppi: tuple[JudgePPI, ...] = ()  # PPI++ estimates of the human mean, per judge × dimension

    def __bool__(self) -> bool:
        return bool(self.judges) or bool(self.positions)

    def for_judge(self, name: str) -> list[JudgeDimensionRow]:
        return [r for r in self.rows if r.judge == name]

    def ppi_for(self, name: str) -> list[JudgePPI]:
        return [p for p in self.ppi if p.judge == name]

    def to_json(self) -> dict[str, dict[str, dict[str, Any]]]:
        out: dict[str, dict[str, dict[str, Any]]] = {j["name"]: {} for j in self.judges}
        for row in self.rows:
            out[row.judge][row.dimension] = row.to_json()
        for name, position in self.positions.items():
            out.setdefault(name, {}).setdefault(OVERALL, {})["position"] = position.to_json()
        for p in self.ppi:
            entry = out.setdefault(p.judge, {}).setdefault(p.dimension, {})
            entry["ppi"] = p.to_json()
            entry["ppi_by_system"] = p.by_system_json()
        return out


def _human_overall(batch: Batch, arrays: ReportArrays) -> np.ndarray:
    weights = np.array([d.weight for d in batch.rubric_obj.dimensions])
    return overall_per_annotation(arrays.annotation_scores, weights)


def human_item_mean(batch: Batch, arrays: ReportArrays, dimension: str = OVERALL) -> np.ndarray:
    """Mean of each item row on ``dimension`` (a rubric key or ``overall`` HCS) over the people who rated it
    (NaN when nobody has)."""
    values = (_human_overall(batch, arrays) if dimension == OVERALL
              else arrays.annotation_scores[:, batch.rubric_obj.dimension_keys.index(dimension)])
    return item_summaries(arrays.annotation_item, values, n_items=len(arrays.item_pk)).mean


def _human_ratings(arrays: ReportArrays, values: np.ndarray) -> dict[int, dict[int, float]]:
    """{item row: {annotator index: value}} for the annotations with a value."""
    ratings: dict[int, dict[int, float]] = {}
    ok = np.isfinite(values)
    for item, annotator, value in zip(arrays.annotation_item[ok], arrays.annotation_annotator[ok], values[ok]):
        ratings.setdefault(int(item), {})[int(annotator)] = float(value)
    return ratings


def human_ratings(batch: Batch, arrays: ReportArrays, dimension: str) -> dict[int, dict[int, float]]:
    """{item row: {annotator index: value}} on ``dimension`` (a rubric key or ``overall`` HCS)."""
    values = (_human_overall(batch, arrays) if dimension == OVERALL
              else arrays.annotation_scores[:, batch.rubric_obj.dimension_keys.index(dimension)])
    return _human_ratings(arrays, values)


def judges_report(*, batch: Batch, arrays: ReportArrays, epsilon: float = DEFAULT_EPSILON, n_boot: int = 1000,
                  seed: int = 0) -> JudgesSection:
    """Each judge × dimension (and overall) calibrated against the report's human ratings."""
    if not 0 <= epsilon < 1:
        raise ValueError(f"epsilon must lie in [0, 1), not {epsilon}")
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
    lengths = {row_of_pk[pk]: n for pk, n in item_lengths(batch).items() if pk in row_of_pk}
    samples = {key: {row_of_pk[pk]: v for pk, v in by_item.items() if pk in row_of_pk}
               for key, by_item in judge_samples(batch).items()}
    scale = (rubric.scale_min, rubric.scale_max)
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
                human_cache[dimension] = human_ratings(batch, arrays, dimension)
            calibration = calibrate_judge(human_cache[dimension], judged, epsilon=epsilon, n_boot=n_boot, seed=seed,
                                          scale=scale)
            probes = dimension_probes(human_cache[dimension], judged, lengths, scale=scale, n_boot=n_boot, seed=seed,
                                      samples=samples.get((judge["pk"], dimension)), item_ids=arrays.item_id)
            label = "Overall HCS" if dimension == OVERALL else rubric.dimension(dimension).label
            rows.append(JudgeDimensionRow(judge["name"], dimension, label,
                                          tuple(sorted(scales[(judge["pk"], dimension)])), calibration, probes))
    mean = human_item_mean(batch, arrays)
    positions = position_results(batch, {int(pk): float(mean[row]) for row, pk in enumerate(arrays.item_pk)},
                                 n_boot=n_boot, seed=seed)
    return JudgesSection(epsilon=epsilon, judges=tuple(judges), rows=tuple(rows), positions=positions,
                         ppi=_ppi_rows(batch, arrays, judges, scores))


def _ppi_rows(batch: Batch, arrays: ReportArrays, judges: list[dict[str, Any]],
              scores: dict[tuple[int, str], dict[int, float]]) -> tuple[JudgePPI, ...]:
    """PPI++ per judge × dimension and overall HCS (from the judge's dimension scores when it gave no overall)."""
    rubric = batch.rubric_obj
    weights = {d.key: d.weight for d in rubric.dimensions}
    human: dict[str, np.ndarray] = {}
    out = []
    for judge in judges:
        mine = {dim: by_item for (pk, dim), by_item in scores.items() if pk == judge["pk"]}
        if OVERALL not in mine:
            derived = judge_overall_scores(mine, weights)
            if derived:
                mine[OVERALL] = derived
        for dimension in (*rubric.dimension_keys, OVERALL):
            if not mine.get(dimension):
                continue
            if dimension not in human:
                human[dimension] = human_item_mean(batch, arrays, dimension)
            label = "Overall HCS" if dimension == OVERALL else rubric.dimension(dimension).label
            out.append(judge_ppi(judge=judge["name"], dimension=dimension, label=label, human_mean=human[dimension],
                                 judged=mine[dimension], item_system=arrays.item_system,
                                 system_names=arrays.system_names))
    return tuple(out)


@dataclass(frozen=True)
class PairwiseRow:
    judge: str
    comparison: PairwiseComparison
    confidence: Reliability | None = None  # stated confidence against being right (verdicts with one)

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
            "confidence_calibration": None if self.confidence is None else {
                "n": self.confidence.n, "ece": _r(self.confidence.ece),
                "bins": [{"lo": b.lo, "hi": b.hi, "n": b.n, "confidence": _r(b.confidence), "accuracy": _r(b.accuracy)}
                         for b in self.confidence.bins],
            },
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
    mean = human_item_mean(batch, arrays)
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
    return PairwiseSection(rows=tuple(
        PairwiseRow(name, compare_verdicts(j, h, c), _confidence_reliability(j, h, c)) for name, (j, h, c) in by_judge.items()
    ))


def _confidence_reliability(judge: list[str], human: list[str], confidence: list[float | None]) -> Reliability | None:
    stated = [math.nan if c is None else c for c in confidence]
    if all(c is None for c in confidence):
        return None
    return reliability(stated, [j == h for j, h in zip(judge, human)])

