"""The report's quality-control part: exclusions, behaviour signals per annotator, agreement with
and without the excluded annotators.

``quality_inputs`` reads the annotations in submission order (one ordered query) and lines them
up with the report's arrays; ``kept_arrays`` are those arrays without the excluded annotators,
which is what agreement, HCS, system ranking and calibration are computed from.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

import numpy as np
from django.db.models import Count, Q

from annotator.models import (
    Annotation,
    AnnotationRevision,
    AnnotatorStanding,
    Assignment,
    Batch,
    GoldAnswer,
    GoldItem,
)
from annotator.quality.selectors.adjudication import adjudications_of
from annotator.quality.selectors.over_time import over_time
from annotator.quality.selectors.standing import quality_rule_of
from annotator.reports.selectors.arrays import ReportArrays
from hcs import quality as q
from hcs.scoring import AnnotatorQuality


@dataclass(frozen=True)
class Exclusion:
    annotator: str
    annotator_pk: int
    rule: str  # "researcher" or "block rule"
    reason: str
    excluded_at: datetime | None


@dataclass(frozen=True, eq=False)
class QualityInputs:
    arrays: ReportArrays  # everyone
    kept_arrays: ReportArrays  # without the excluded annotators
    order: np.ndarray  # array rows in submission order
    seconds: np.ndarray  # per array row: seconds from lease to submission (NaN if unknown)
    days: list[str]  # per row in submission order: the submission day (UTC)
    annotator_pks: list[int]  # per annotator index
    exclusions: tuple[Exclusion, ...]

    @property
    def any_excluded(self) -> bool:
        return bool(self.exclusions)


@dataclass(frozen=True)
class AnnotatorSignals:
    annotator: str
    annotator_pk: int
    n_annotations: int
    gold_accuracy: float | None  # share of gold answers (training and checks) right
    gold_answered: int
    checks_passed: int
    checks_failed: int
    excluded: bool
    exclusion_reason: str
    blocked: bool
    warned: bool
    training: str
    median_seconds: float | None
    fast_share: float | None  # share under the batch's minimum seconds
    straightlining: float | None  # share of annotations with every dimension equal
    longest_run: int  # longest run of identical score vectors
    loo_spearman: float | None  # overall HCS vs the leave-one-out consensus
    edits: int
    skips: int
    signals: tuple[q.Signal, ...]
    adjudicated: tuple[int, float | None, float | None] = (0, None, None)  # n, share exact, MAE
    loo_n: int = 0  # items shared with others behind loo_spearman

    @property
    def flagged(self) -> bool:
        return any(s.flagged for s in self.signals)


@dataclass(frozen=True)
class QualitySection:
    annotators: dict[str, AnnotatorSignals]
    exclusions: tuple[Exclusion, ...]
    dimensions_all: tuple  # the report's DimensionRow of agreement with every annotator
    min_seconds: float
    over_time: object | None = None
    adjudications: tuple = ()  # annotator.models.Adjudication of the batch's items

    template = "annotator/_report_quality.html"


def quality_inputs(*, batch: Batch, arrays: ReportArrays) -> QualityInputs:
    rows = list(
        Annotation.objects.filter(item__batch=batch)
        .order_by("submitted_at", "id")
        .values_list("item_id", "annotator_id", "annotator__username", "started_at", "submitted_at")
    )
    n_annotators = max(len(arrays.annotator_names), 1)
    name_index = {name: i for i, name in enumerate(arrays.annotator_names)}
    pks = [0] * len(arrays.annotator_names)
    sorter = np.argsort(arrays.item_pk)
    item_row = {int(arrays.item_pk[i]): int(i) for i in sorter}
    keys = arrays.annotation_item * n_annotators + arrays.annotation_annotator
    key_sort = np.argsort(keys, kind="stable")
    wanted = np.empty(len(rows), dtype=np.int64)
    seconds_in_order = np.full(len(rows), np.nan)
    days = []
    for n, (item_pk, user_pk, name, started, submitted) in enumerate(rows):
        days.append(submitted.date().isoformat())
        a = name_index[name]
        pks[a] = user_pk
        wanted[n] = item_row[item_pk] * n_annotators + a
        if started is not None:
            seconds_in_order[n] = (submitted - started).total_seconds()
    order = key_sort[np.searchsorted(keys[key_sort], wanted)] if len(rows) else np.zeros(0, dtype=np.int64)
    seconds = np.full(len(keys), np.nan)
    seconds[order] = seconds_in_order
    standings = AnnotatorStanding.objects.filter(batch=batch, excluded=True).select_related("annotator")
    exclusions = tuple(
        Exclusion(
            s.annotator.get_username(), s.annotator_id, s.exclusion_rule, s.exclusion_reason, s.excluded_at
        )
        for s in standings.order_by("excluded_at", "pk")
    )
    kept = _without(batch, arrays, order, {e.annotator for e in exclusions}) if exclusions else arrays
    return QualityInputs(arrays, kept, order, seconds, days, pks, exclusions)


def _without(batch: Batch, arrays: ReportArrays, order: np.ndarray, names: set[str]) -> ReportArrays:
    """The report arrays without the annotations of ``names``; counts rebuilt in submission order."""
    rubric = batch.rubric_obj
    drop = np.array([n in names for n in arrays.annotator_names], dtype=bool)
    keep_rows = ~drop[arrays.annotation_annotator] if len(arrays.annotation_annotator) else np.zeros(0, bool)
    n_items = len(arrays.item_pk)
    item, scores, keep = arrays.annotation_item[order], arrays.annotation_scores[order], keep_rows[order]
    counts = q.count_cube(item, scores, n_items=n_items, levels=rubric.levels, keep=keep)
    fleiss = q.count_cube(item, scores, n_items=n_items, levels=rubric.levels, keep=keep, first_k=batch.k)
    new_index = np.cumsum(~drop) - 1
    return replace(
        arrays,
        counts=counts,
        fleiss_counts=fleiss,
        annotation_item=arrays.annotation_item[keep_rows],
        annotation_annotator=new_index[arrays.annotation_annotator[keep_rows]],
        annotation_scores=arrays.annotation_scores[keep_rows],
        annotator_names=[n for n, d in zip(arrays.annotator_names, drop) if not d],
    )


def _reference(batch: Batch, arrays: ReportArrays, adjudications) -> np.ndarray:
    """Items × dimensions: the adjudicated scores, NaN for items not adjudicated."""
    dims = batch.rubric_obj.dimension_keys
    out = np.full((len(arrays.item_pk), len(dims)), np.nan)
    row_of = {int(pk): n for n, pk in enumerate(arrays.item_pk)}
    for adj in adjudications:
        out[row_of[adj.item_id]] = [adj.scores.get(d, np.nan) for d in dims]
    return out


def _per_user(queryset, user_field: str) -> dict[int, int]:
    return dict(queryset.values_list(user_field).annotate(n=Count("pk")).values_list(user_field, "n"))


def quality_section(
    *,
    batch: Batch,
    inputs: QualityInputs,
    annotators_all: tuple[AnnotatorQuality, ...],
    dimensions_all: tuple,
    with_over_time: bool = True,
) -> QualitySection:
    """Signals per annotator (from every annotation, excluded or not) and the exclusions; with
    ``with_over_time``, agreement per window of submissions and per day (most of the cost of a large batch).

    ``annotators_all`` and ``dimensions_all`` are the report's annotator table and agreement rows computed
    with every annotator."""
    rule = quality_rule_of(batch=batch)
    arrays = inputs.arrays
    facts = _batch_facts(batch)
    loo = {a.annotator: a.spearman_loo.get("overall") for a in annotators_all}
    loo_n = {a.annotator: a.n_shared.get("overall", 0) for a in annotators_all}
    adjudications = adjudications_of(batch=batch)
    reference = _reference(batch, arrays, adjudications)
    in_order = arrays.annotation_annotator[inputs.order]
    scores_in_order = arrays.annotation_scores[inputs.order]
    seconds_in_order = inputs.seconds[inputs.order]
    out = {}
    for a, name in enumerate(arrays.annotator_names):
        mine = in_order == a
        rated = arrays.annotation_annotator == a
        out[name] = _signals(
            name,
            inputs.annotator_pks[a],
            facts,
            rule,
            seconds=seconds_in_order[mine],
            scores=scores_in_order[mine],
            loo=(loo.get(name), loo_n.get(name, 0)),
            adjudicated=q.agreement_with_reference(
                arrays.annotation_scores[rated], reference[arrays.annotation_item[rated]]
            ),
        )
    return QualitySection(
        annotators=out,
        exclusions=inputs.exclusions,
        dimensions_all=dimensions_all,
        min_seconds=rule.min_seconds,
        adjudications=tuple(adjudications),
        over_time=_over_time(batch, inputs, in_order, rule) if with_over_time else None,
    )


@dataclass(frozen=True)
class _BatchFacts:
    """What the batch's tables say of each annotator, by user pk: gold answers (right, answered, checks
    passed and failed), standing, edits made and items skipped."""

    gold: dict[int, dict]
    standings: dict[int, AnnotatorStanding]
    edits: dict[int, int]
    skips: dict[int, int]


def _batch_facts(batch: Batch) -> _BatchFacts:
    gold = {
        row["annotator_id"]: row
        for row in GoldAnswer.objects.filter(
            gold_item__batch=batch, submitted_at__isnull=False, skipped=False
        )
        .values("annotator_id")
        .annotate(
            right=Count("pk", filter=Q(passed=True)),
            answered=Count("pk"),
            checks_passed=Count("pk", filter=Q(passed=True, gold_item__kind=GoldItem.Kind.CHECK)),
            checks_failed=Count("pk", filter=Q(passed=False, gold_item__kind=GoldItem.Kind.CHECK)),
        )
    }
    return _BatchFacts(
        gold=gold,
        standings={s.annotator_id: s for s in AnnotatorStanding.objects.filter(batch=batch)},
        edits=_per_user(AnnotationRevision.objects.filter(annotation__item__batch=batch), "changed_by_id"),
        skips=_per_user(
            Assignment.objects.filter(item__batch=batch, state=Assignment.State.SKIPPED), "annotator_id"
        ),
    )


def _signals(
    name: str, pk: int, facts: _BatchFacts, rule, *, seconds, scores, loo, adjudicated
) -> AnnotatorSignals:
    """One annotator's signals from their annotations' ``seconds`` and ``scores`` in submission order,
    ``loo`` (their leave-one-out ρ and its shared items) and their agreement with the adjudicated scores."""
    loo_spearman, loo_n = loo
    median, fast = q.seconds_signals(seconds, minimum=rule.min_seconds)
    straight, run = q.straightlining(scores)
    g = facts.gold.get(pk, {})
    answered = g.get("answered", 0)
    accuracy = g["right"] / answered if answered else None
    standing = facts.standings.get(pk)
    return AnnotatorSignals(
        annotator=name,
        annotator_pk=pk,
        n_annotations=len(seconds),
        gold_accuracy=accuracy,
        gold_answered=answered,
        checks_passed=g.get("checks_passed", 0),
        checks_failed=g.get("checks_failed", 0),
        excluded=bool(standing and standing.excluded),
        exclusion_reason=standing.exclusion_reason if standing and standing.excluded else "",
        blocked=bool(standing and standing.blocked_at),
        warned=bool(standing and standing.warned_at),
        training=standing.training if standing else "",
        median_seconds=median,
        fast_share=fast,
        straightlining=straight,
        longest_run=run,
        loo_spearman=loo_spearman,
        loo_n=loo_n,
        edits=facts.edits.get(pk, 0),
        skips=facts.skips.get(pk, 0),
        adjudicated=adjudicated,
        signals=q.behaviour_flags(
            fast_share=fast,
            straight_share=straight,
            longest_run=run,
            loo_spearman=loo_spearman,
            loo_n=loo_n,
            gold_accuracy=accuracy,
            check_warn_below=rule.check_warn_below,
        ),
    )


def _over_time(batch: Batch, inputs: QualityInputs, in_order: np.ndarray, rule):
    """Agreement per window of submissions and per day, without the excluded annotators."""
    arrays = inputs.arrays
    excluded = {e.annotator for e in inputs.exclusions}
    keep = (
        np.array([name not in excluded for name in arrays.annotator_names], dtype=bool)[in_order]
        if len(in_order)
        else np.zeros(0, dtype=bool)
    )
    return over_time(
        batch=batch, arrays=arrays, order=inputs.order, keep=keep, days=inputs.days, every=rule.window
    )
