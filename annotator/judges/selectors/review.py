"""Items for human review where the judges are least sure: database rows → ``hcs.routing`` → ranked rows.

Candidates are a batch's items with at least one judge score and no annotation from an annotator who
counts: an excluded annotator's ratings are left out, as the report and its PPI++ panel leave them out
(``excluded_annotator_ids``). Per dimension (and
overall) the uncertainty is the largest of: the SD across judges, the SD across one judge's samples
(``run_judge --samples``), a stated confidence where a call's parsed output stores one
(``scores.<dimension>.confidence``, 0–1) and closeness to a cap of the rubric; an item's uncertainty
is its largest over dimensions. Items with none of these signals come last with an empty uncertainty.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from django.db.models import Exists, OuterRef

from annotator.models import Annotation, Batch, Judge, JudgeCall, JudgeScore
from annotator.quality.selectors.standing import excluded_annotator_ids
from hcs.routing import Uncertainty, item_uncertainty, most_uncertain

COLUMNS = ("item_id", "system_id", "uncertainty", "reason")
MAX_N = 100_000


class ReviewError(ValueError):
    """A request for review items that cannot be answered; the message says what to change."""


@dataclass(frozen=True)
class ReviewRow:
    item_pk: int
    item_id: str
    system_id: str
    uncertainty: float | None
    reason: str

    def cells(self) -> list:
        return [
            self.item_id,
            self.system_id,
            "" if self.uncertainty is None else repr(self.uncertainty),
            self.reason,
        ]

    def to_json(self) -> dict:
        return {
            "item_id": self.item_id,
            "system_id": self.system_id,
            "uncertainty": self.uncertainty,
            "reason": self.reason,
        }


def parse_n(value) -> int:
    """``n`` from a form, a query or the command line, or a ReviewError that says what is wrong."""
    try:
        n = int(str(value).strip())
    except (TypeError, ValueError):
        raise ReviewError(f"n must be a whole number of items, not {value!r}") from None
    if not 1 <= n <= MAX_N:
        raise ReviewError(f"n must lie between 1 and {MAX_N:,}, not {n}")
    return n


def _caps(batch: Batch) -> dict[str, list[float]]:
    """Per dimension, the score values a rule caps it at from above (e.g. Safety-Compliance at 1 and 2)."""
    rubric = batch.rubric_obj
    caps: dict[str, list[float]] = {}
    for rule in rubric.rules:
        if rule.max < rubric.scale_max:
            caps.setdefault(rule.dimension, []).append(float(rule.max))
    return caps


def review_candidates(*, batch: Batch, n: int, judges: list[str] | None = None) -> list[ReviewRow]:
    """The ``n`` unlabelled items whose judge scores are least certain, most uncertain first."""
    n = parse_n(n)
    return ranked_candidates(batch=batch, judges=judges)[:n]


def judges_chosen(batch: Batch, judges: list[str] | None) -> list[Judge]:
    """The batch's judges with scores, or the named ones; a ReviewError names unknown ones or says none has scored."""
    in_batch = Judge.objects.filter(scores__item__batch=batch).distinct()
    names = sorted(in_batch.values_list("name", flat=True))
    if judges:
        unknown = sorted(set(judges) - set(names))
        if unknown:
            raise ReviewError(
                f"No scores in batch {batch.name!r} from judge(s) {', '.join(map(repr, unknown))}. "
                f"Judges with scores: {', '.join(map(repr, names)) or 'none'}."
            )
    chosen = list(in_batch.filter(name__in=judges)) if judges else list(in_batch)
    if not chosen:
        raise ReviewError(f"Batch {batch.name!r} has no judge scores yet: run or import a judge first.")
    return chosen


def ranked_candidates(*, batch: Batch, judges: list[str] | None = None) -> list[ReviewRow]:
    """Every unlabelled item with a judge score, most uncertain first (batch order breaks ties)."""
    chosen = judges_chosen(batch, judges)
    annotated = _counted_annotations(batch)
    scores = (
        JudgeScore.objects.filter(item__batch=batch, judge__in=chosen)
        .annotate(labelled=Exists(annotated))
        .filter(labelled=False)
        .values_list(
            "item", "item__item_id", "item__system_id", "item__position", "judge", "dimension", "value"
        )
    )
    items: dict[int, tuple[str, str, int]] = {}
    by_dimension: dict[str, dict[tuple[int, int], float]] = {}
    for item, item_id, system_id, position, judge, dimension, value in scores:
        items[item] = (item_id, system_id, position)
        by_dimension.setdefault(dimension, {})[(item, judge)] = value
    if not items:
        return []
    order = sorted(items, key=lambda pk: (items[pk][2], pk))
    row = {pk: r for r, pk in enumerate(order)}
    judge_pks = [j.pk for j in chosen]
    samples, confidence = _calls(batch, judge_pks, row)
    caps = _caps(batch)
    parts: dict[str, Uncertainty] = {}
    for dimension in sorted(set(by_dimension) | {d for _, d in samples} | {d for _, d in confidence}):
        matrix = np.full((len(order), len(judge_pks)), np.nan)
        for (item, judge), value in by_dimension.get(dimension, {}).items():
            matrix[row[item], judge_pks.index(judge)] = value
        parts[dimension] = item_uncertainty(
            n_items=len(order), judge_scores=matrix, caps=caps.get(dimension, ()), scale=_scale(batch)
        )
        for judge in chosen:
            s, c = samples.get((judge.pk, dimension)), confidence.get((judge.pk, dimension))
            if s is not None or c is not None:
                parts[f"{dimension} ({judge.name})"] = item_uncertainty(
                    n_items=len(order), samples=s, confidence=c, scale=_scale(batch)
                )
    combined = most_uncertain(parts) if parts else None
    rows = []
    for r, pk in enumerate(order):
        value = None if combined is None or not math.isfinite(combined.value[r]) else float(combined.value[r])
        reason = (
            combined.reason[r]
            if value is not None
            else "no uncertainty signal: one judge, no samples, no confidence"
        )
        rows.append(ReviewRow(pk, items[pk][0], items[pk][1], value, reason))
    rows.sort(
        key=lambda x: (x.uncertainty is None, -(x.uncertainty or 0.0))
    )  # stable: batch order breaks ties
    return rows


def _counted_annotations(batch: Batch):
    """The annotations that make an item labelled: the report's, without excluded annotators'."""
    return Annotation.objects.filter(item=OuterRef("item")).exclude(
        annotator_id__in=excluded_annotator_ids(batch=batch)
    )


def _scale(batch: Batch) -> tuple[float, float]:
    rubric = batch.rubric_obj
    return (rubric.scale_min, rubric.scale_max)


def _calls(batch: Batch, judge_pks: list[int], row: dict[int, int]):
    """(judge, dimension) → items × samples matrix of sampled values, and → per-item stated confidence."""
    values: dict[tuple[int, str], dict[int, list[float]]] = {}
    stated: dict[tuple[int, str], dict[int, float]] = {}
    annotated = _counted_annotations(batch)
    calls = (
        JudgeCall.objects.filter(
            item__batch=batch, judge__in=judge_pks, enhanced__isnull=True, status=JudgeCall.OK
        )
        .annotate(labelled=Exists(annotated))
        .filter(labelled=False)
        .values_list("judge", "item", "sample", "parsed")
    )
    for judge, item, _sample, parsed in calls:
        if item not in row:
            continue
        for dimension, score in (parsed or {}).get("scores", {}).items():
            if not isinstance(score, dict):
                continue
            if isinstance(score.get("value"), (int, float)):  # the kept call (0) and its repeats
                values.setdefault((judge, dimension), {}).setdefault(item, []).append(float(score["value"]))
            c = score.get("confidence")
            if isinstance(c, (int, float)) and 0 <= c <= 1:
                stated.setdefault((judge, dimension), {})[item] = float(c)
    n = len(row)
    samples = {}
    for key, by_item in values.items():
        width = max(len(v) for v in by_item.values())
        matrix = np.full((n, width), np.nan)
        for item, vs in by_item.items():
            matrix[row[item], : len(vs)] = vs
        samples[key] = matrix
    confidence = {}
    for key, by_item in stated.items():
        vector = np.full(n, np.nan)
        for item, c in by_item.items():
            vector[row[item]] = c
        confidence[key] = vector
    return samples, confidence
