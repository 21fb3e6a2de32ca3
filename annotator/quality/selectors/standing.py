"""Reads for quality control: a batch's rule, an annotator's standing, their gold answers."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q

from annotator.models import AnnotatorStanding, Batch, GoldAnswer, GoldItem, QualityRule


def quality_rule_of(*, batch: Batch) -> QualityRule:
    """The batch's rule, or an unsaved one with the defaults (no training, checks 1 in 10)."""
    return QualityRule.objects.filter(batch=batch).first() or QualityRule(batch=batch)


def standing_of(*, batch: Batch, annotator) -> AnnotatorStanding | None:
    return AnnotatorStanding.objects.filter(batch=batch, annotator=annotator).first()


def training_answers(*, batch: Batch, annotator) -> list[GoldAnswer]:
    """The annotator's submitted training answers, in the order given."""
    return list(
        GoldAnswer.objects.filter(
            gold_item__batch=batch,
            gold_item__kind=GoldItem.Kind.TRAINING,
            annotator=annotator,
            submitted_at__isnull=False,
        )
    )


def check_counts(*, batch: Batch, annotator) -> tuple[int, int, int]:
    """Checks passed, failed (skips count neither) and shown to the annotator."""
    row = GoldAnswer.objects.filter(
        gold_item__batch=batch, gold_item__kind=GoldItem.Kind.CHECK, annotator=annotator
    ).aggregate(
        n_passed=Count("pk", filter=Q(passed=True)),
        n_failed=Count("pk", filter=Q(passed=False, skipped=False)),
        n_shown=Count("pk"),
    )
    return row["n_passed"], row["n_failed"], row["n_shown"]


def excluded_annotator_ids(*, batch: Batch) -> set[int]:
    return set(
        AnnotatorStanding.objects.filter(batch=batch, excluded=True).values_list("annotator_id", flat=True)
    )


def gold_answer_of(*, user, pk: int) -> GoldAnswer | None:
    """The user's own gold answer (None for anyone else's: a 404, not a 403)."""
    return GoldAnswer.objects.select_related("gold_item__batch").filter(pk=pk, annotator=user).first()


def training_feedback(*, step) -> dict[str, Any]:
    """After a training item: the expert's scores beside the annotator's, differences marked."""
    answer, comparison = step.answer, step.comparison
    gold = answer.gold_item
    rubric = gold.batch.rubric_obj
    labels = {f.key: f.label for f in rubric.flags}
    rows = [
        {
            "label": d.label,
            "own": answer.scores.get(d.key),
            "expert": gold.scores.get(d.key),
            "difference": comparison.differences.get(d.key),
            "off": d.key in comparison.off,
        }
        for d in rubric.dimensions
    ]
    training = GoldItem.objects.filter(batch_id=gold.batch_id, kind=GoldItem.Kind.TRAINING)
    return {
        "item": gold,  # for the template's context only: its item_id is never shown (blindness)
        "number": GoldAnswer.objects.filter(
            gold_item__in=training, annotator_id=answer.annotator_id, submitted_at__isnull=False
        ).count(),
        "total": training.count(),
        "rows": rows,
        "tolerance": gold.tolerance,
        "flags_missing": [labels.get(f, f) for f in comparison.flags_missing],
        "flags_extra": [labels.get(f, f) for f in comparison.flags_extra],
        "expert_flags": [labels.get(f, f) for f in (gold.flags or [])],
        "explanation": gold.explanation,
        "mae": comparison.mae,
        "outcome": step.standing,  # "passed", "failed" or "" while training goes on
    }
