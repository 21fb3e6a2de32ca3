"""Judge calibration for a batch report: database rows → ``hcs.calibration`` → a frozen section.

``REPORT_SECTIONS`` (:mod:`annotator.reports.selectors.sections`) lists ``judges_section`` and
``pairwise_section`` as the report's sections ``"judges"`` (per judge × dimension) and ``"judge_pairwise"``
(pairwise verdicts against the human preference). The human side comes from the
report's arrays, so judges are read against exactly the annotations the report shows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from django.db.models import Count

from annotator.judges.models.judge import OVERALL
from annotator.judges.selectors.draws import draw_design
from annotator.judges.selectors.probes import (
    DimensionProbes,
    PositionResult,
    dimension_probes,
    item_lengths,
    judge_samples,
    position_results,
)
from annotator.judges.selectors.sample import labelled_sample
from annotator.judges.selectors.validation import JudgePPI, judge_overall_scores, judge_ppi
from annotator.judges.selectors.verdicts import counted_verdicts
from annotator.models import Batch, Judge, JudgeFailure, JudgeScore
from annotator.reports.selectors.arrays import ReportArrays
from annotator.reports.selectors.sections import SectionInputs
from hcs.calibration import (
    JudgeCalibration,
    PairwiseComparison,
    calibrate_judge,
    compare_verdicts,
    human_preference,
)
from hcs.calibration.alt_test import DEFAULT_EPSILON
from hcs.calibration.confidence import Reliability, reliability
from hcs.calibration.logprobs import pointwise_reliability
from hcs.calibration.pairwise import DEFAULT_TIE_MARGIN, pair_outcomes, wilson
from hcs.scoring import item_summaries, overall_per_annotation

# How pairs are counted, in the JSON beside the figures it explains.
COUNTING = (
    "each pair once; a pair judged in both orders (--swap) wins only when both orders name the same "
    "response and is a tie otherwise; people prefer the item whose mean overall HCS is higher by at "
    "least tie_margin, else it is a tie"
)


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
    confidence: Reliability | None = None  # logprob confidence in each score against matching the human mean

    def to_json(self) -> dict[str, Any]:
        c, alt = self.calibration, self.calibration.alt_test
        return {
            **(self.probes.to_json() if self.probes else {}),
            "confidence_calibration": _reliability_json(self.confidence),
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


def _reliability_json(r: Reliability | None) -> dict[str, Any] | None:
    return (
        None
        if r is None
        else {
            "n": r.n,
            "ece": _r(r.ece),
            "bins": [
                {"lo": b.lo, "hi": b.hi, "n": b.n, "confidence": _r(b.confidence), "accuracy": _r(b.accuracy)}
                for b in r.bins
            ],
        }
    )


def _pointwise_confidence(
    confidence: dict[int, float], judged: dict[int, float], human_mean: np.ndarray, step: float
) -> Reliability | None:
    """ECE of the scores that came with a logprob confidence; None when none did."""
    rows = sorted(confidence)
    if not rows:
        return None
    return pointwise_reliability(
        [confidence[r] for r in rows], [judged[r] for r in rows], human_mean[rows], step=step
    )


def _human_overall(batch: Batch, arrays: ReportArrays) -> np.ndarray:
    weights = np.array([d.weight for d in batch.rubric_obj.dimensions])
    return overall_per_annotation(arrays.annotation_scores, weights)


def human_item_mean(batch: Batch, arrays: ReportArrays, dimension: str = OVERALL) -> np.ndarray:
    """Mean of each item row on ``dimension`` (a rubric key or ``overall`` HCS) over the people who rated it
    (NaN when nobody has)."""
    values = (
        _human_overall(batch, arrays)
        if dimension == OVERALL
        else arrays.annotation_scores[:, batch.rubric_obj.dimension_keys.index(dimension)]
    )
    return item_summaries(arrays.annotation_item, values, n_items=len(arrays.item_pk)).mean


def _human_ratings(arrays: ReportArrays, values: np.ndarray) -> dict[int, dict[int, float]]:
    """{item row: {annotator index: value}} for the annotations with a value."""
    ratings: dict[int, dict[int, float]] = {}
    ok = np.isfinite(values)
    for item, annotator, value in zip(
        arrays.annotation_item[ok], arrays.annotation_annotator[ok], values[ok]
    ):
        ratings.setdefault(int(item), {})[int(annotator)] = float(value)
    return ratings


def human_ratings(batch: Batch, arrays: ReportArrays, dimension: str) -> dict[int, dict[int, float]]:
    """{item row: {annotator index: value}} on ``dimension`` (a rubric key or ``overall`` HCS)."""
    values = (
        _human_overall(batch, arrays)
        if dimension == OVERALL
        else arrays.annotation_scores[:, batch.rubric_obj.dimension_keys.index(dimension)]
    )
    return _human_ratings(arrays, values)


def judges_report(
    *, batch: Batch, arrays: ReportArrays, epsilon: float = DEFAULT_EPSILON, n_boot: int = 1000, seed: int = 0
) -> JudgesSection:
    """Each judge × dimension (and overall) calibrated against the report's human ratings."""
    if not 0 <= epsilon < 1:
        raise ValueError(f"epsilon must lie in [0, 1), not {epsilon}")
    judges = _judges_counted(batch)
    row_of_pk = {int(pk): row for row, pk in enumerate(arrays.item_pk)}
    read = _scores_read(batch, row_of_pk)
    rows = _Calibrator(batch, arrays, row_of_pk, epsilon=epsilon, n_boot=n_boot, seed=seed).rows(judges, read)
    mean = human_item_mean(batch, arrays)
    positions = position_results(
        batch, {int(pk): float(mean[row]) for row, pk in enumerate(arrays.item_pk)}, n_boot=n_boot, seed=seed
    )
    return JudgesSection(
        epsilon=epsilon,
        judges=tuple(judges),
        rows=tuple(rows),
        positions=positions,
        ppi=_ppi_rows(batch, arrays, judges, read.values),
    )


def _judges_counted(batch: Batch) -> list[dict[str, Any]]:
    """The judges that scored ``batch``, by name, each with its counts of scores and failures on it."""
    judges = list(
        Judge.objects.filter(scores__item__batch=batch)
        .distinct()
        .order_by("name")
        .values("pk", "name", "model", "template", "template_version")
    )
    counts = dict(
        JudgeScore.objects.filter(item__batch=batch)
        .values("judge")
        .annotate(n=Count("id"))
        .values_list("judge", "n")
    )
    failures = dict(
        JudgeFailure.objects.filter(item__batch=batch)
        .values("judge")
        .annotate(n=Count("id"))
        .values_list("judge", "n")
    )
    for judge in judges:
        judge["n_scores"] = counts.get(judge["pk"], 0)
        judge["n_failures"] = failures.get(judge["pk"], 0)
    return judges


@dataclass
class _ScoresRead:
    """A batch's judge scores, each map keyed by (judge pk, dimension)."""

    values: dict[tuple[int, str], dict[int, float]] = field(default_factory=dict)  # item row → score
    scales: dict[tuple[int, str], set[str]] = field(default_factory=dict)  # the scales they were given on
    confidences: dict[tuple[int, str], dict[int, float]] = field(default_factory=dict)  # item row → logprob's
    steps: dict[tuple[int, str], float] = field(default_factory=dict)  # one judge point on the rubric's scale


def _scores_read(batch: Batch, row_of_pk: dict[int, int]) -> _ScoresRead:
    rubric, read = batch.rubric_obj, _ScoresRead()
    for judge_pk, dimension, item_pk, value, lo, hi, higher, confidence in JudgeScore.objects.filter(
        item__batch=batch
    ).values_list(
        "judge", "dimension", "item", "value", "scale_min", "scale_max", "higher_is_better", "confidence"
    ):
        key, row = (judge_pk, dimension), row_of_pk[item_pk]
        read.values.setdefault(key, {})[row] = value
        read.scales.setdefault(key, set()).add(f"{lo:g}–{hi:g}" + ("" if higher else " (lower is better)"))
        if confidence is not None:
            read.confidences.setdefault(key, {})[row] = confidence
            read.steps[key] = (rubric.scale_max - rubric.scale_min) / (hi - lo)
    return read


class _Calibrator:
    """Calibrates each judge × dimension against the human ratings, read once per dimension."""

    def __init__(
        self, batch: Batch, arrays: ReportArrays, row_of_pk, *, epsilon: float, n_boot: int, seed: int
    ):
        self.batch, self.arrays, self.rubric = batch, arrays, batch.rubric_obj
        self.epsilon, self.n_boot, self.seed = epsilon, n_boot, seed
        self.scale = (self.rubric.scale_min, self.rubric.scale_max)
        self.lengths = {row_of_pk[pk]: n for pk, n in item_lengths(batch).items() if pk in row_of_pk}
        self.samples = {
            key: {row_of_pk[pk]: v for pk, v in by_item.items() if pk in row_of_pk}
            for key, by_item in judge_samples(batch).items()
        }
        self.human: dict[str, dict[int, dict[int, float]]] = {}

    def rows(self, judges: list[dict[str, Any]], read: _ScoresRead) -> list[JudgeDimensionRow]:
        """A row per judge × dimension it scored, in the judges' order, the rubric's dimensions then overall."""
        return [
            self.row(judge, dimension, read)
            for judge in judges
            for dimension in (*self.rubric.dimension_keys, OVERALL)
            if read.values.get((judge["pk"], dimension))
        ]

    def row(self, judge: dict[str, Any], dimension: str, read: _ScoresRead) -> JudgeDimensionRow:
        key = (judge["pk"], dimension)
        judged = read.values[key]
        if dimension not in self.human:
            self.human[dimension] = human_ratings(self.batch, self.arrays, dimension)
        human, n_boot, seed = self.human[dimension], self.n_boot, self.seed
        calibration = calibrate_judge(
            human, judged, epsilon=self.epsilon, n_boot=n_boot, seed=seed, scale=self.scale
        )
        probes = dimension_probes(
            human,
            judged,
            self.lengths,
            scale=self.scale,
            n_boot=n_boot,
            seed=seed,
            samples=self.samples.get(key),
            item_ids=self.arrays.item_id,
        )
        confidence = None
        if key in read.confidences:
            mean = human_item_mean(self.batch, self.arrays, dimension)
            confidence = _pointwise_confidence(read.confidences[key], judged, mean, read.steps[key])
        label = "Overall HCS" if dimension == OVERALL else self.rubric.dimension(dimension).label
        scales = tuple(sorted(read.scales[key]))
        return JudgeDimensionRow(judge["name"], dimension, label, scales, calibration, probes, confidence)


def judges_section(inputs: SectionInputs) -> JudgesSection:
    """The report section ``judges`` (listed in ``REPORT_SECTIONS``)."""
    return judges_report(
        batch=inputs.batch,
        arrays=inputs.arrays,
        epsilon=inputs.epsilon,
        n_boot=inputs.n_resamples,
        seed=inputs.seed,
    )


def _ppi_rows(
    batch: Batch,
    arrays: ReportArrays,
    judges: list[dict[str, Any]],
    scores: dict[tuple[int, str], dict[int, float]],
) -> tuple[JudgePPI, ...]:
    """PPI++ per judge × dimension and overall HCS (from the judge's dimension scores when it gave no overall);
    active inference when the batch has a review draw in force."""
    rubric = batch.rubric_obj
    weights = {d.key: d.weight for d in rubric.dimensions}
    human: dict[str, np.ndarray] = {}
    design = draw_design(batch, arrays.item_pk)
    sample = labelled_sample(batch, arrays, draw_in_force=design is not None) if judges else None
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
            out.append(
                judge_ppi(
                    judge=judge["name"],
                    dimension=dimension,
                    label=label,
                    human_mean=human[dimension],
                    judged=mine[dimension],
                    item_system=arrays.item_system,
                    system_names=arrays.system_names,
                    design=design,
                    sample=sample,
                )
            )
    return tuple(out)


@dataclass(frozen=True)
class PairwiseRow:
    judge: str
    comparison: PairwiseComparison  # one outcome per pair people rated both items of
    confidence: Reliability | None = None  # stated confidence against being right (verdicts with one)
    n_verdicts: int = 0  # verdicts saved, both orders of a --swap pair included
    n_pairs: int = 0  # pairs judged, each counted once
    n_both_orders: int = 0
    n_consistent: int = 0  # pairs judged in both orders whose two verdicts name the same response
    consistency_ci95: tuple[float | None, float | None] = (None, None)  # Wilson

    def to_json(self) -> dict[str, Any]:
        c = self.comparison
        return {
            "n": c.n,
            "n_verdicts": self.n_verdicts,
            "n_pairs": self.n_pairs,
            "tie_margin": DEFAULT_TIE_MARGIN,
            "counting": COUNTING,
            "agreement": _r(c.agreement),
            "agreement_ci95": [_r(c.agreement_ci95[0]), _r(c.agreement_ci95[1])],
            "agreement_ci_method": "wilson",
            "kappa": _r(c.kappa),
            "order_consistency": {
                "n_pairs_both_orders": self.n_both_orders,
                "n_consistent": self.n_consistent,
                "consistency": _r(self.n_consistent / self.n_both_orders) if self.n_both_orders else None,
                "consistency_ci95": [_r(self.consistency_ci95[0]), _r(self.consistency_ci95[1])],
            },
            "confident_threshold": c.confident_threshold,
            "n_confident": c.n_confident,
            "confident_accuracy": _r(c.confident_accuracy),
            "table": c.table,
            "confidence_calibration": _reliability_json(self.confidence),
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
    """Each pairwise judge against the human preference, every pair counted once (``hcs.calibration.pair_outcomes``)."""
    verdicts = list(
        counted_verdicts(batch=batch)
        .values_list("judge__name", "baseline", "enhanced", "winner", "swapped", "confidence")
        .order_by("judge__name", "swapped", "id")
    )
    if not verdicts:
        return PairwiseSection(rows=())
    mean = human_item_mean(batch, arrays)
    row_of_pk = {int(pk): row for row, pk in enumerate(arrays.item_pk)}
    by_judge: dict[str, list] = {}
    for judge, *verdict in verdicts:
        by_judge.setdefault(judge, []).append(tuple(verdict))
    rows = []
    for name, judged in by_judge.items():
        pairs = pair_outcomes(judged)
        j, h, c = [], [], []
        for pair in pairs:
            b, e = mean[row_of_pk[pair.baseline]], mean[row_of_pk[pair.enhanced]]
            if not (np.isfinite(b) and np.isfinite(e)):
                continue  # people have not rated both items yet
            j.append(pair.outcome)
            h.append(human_preference(float(b), float(e), tie_margin=DEFAULT_TIE_MARGIN))
            c.append(pair.confidence)
        both = [p for p in pairs if p.both_orders]
        consistent = sum(bool(p.consistent) for p in both)
        rows.append(
            PairwiseRow(
                name,
                compare_verdicts(j, h, c),
                _confidence_reliability(j, h, c),
                n_verdicts=len(judged),
                n_pairs=len(pairs),
                n_both_orders=len(both),
                n_consistent=consistent,
                consistency_ci95=wilson(consistent, len(both)),
            )
        )
    return PairwiseSection(rows=tuple(rows))


def pairwise_section(inputs: SectionInputs) -> PairwiseSection:
    """The report section ``judge_pairwise`` (listed in ``REPORT_SECTIONS``)."""
    return pairwise_report(batch=inputs.batch, arrays=inputs.arrays)


def _confidence_reliability(
    judge: list[str], human: list[str], confidence: list[float | None]
) -> Reliability | None:
    stated = [math.nan if c is None else c for c in confidence]
    if all(c is None for c in confidence):
        return None
    return reliability(stated, [j == h for j, h in zip(judge, human)])
