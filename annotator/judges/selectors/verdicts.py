"""Reads of judge data shared by the report sections and the exports."""

from __future__ import annotations

from django.db.models import Exists, OuterRef, QuerySet

from annotator.models import Batch, JudgeCall, PairwiseVerdict


def counted_verdicts(*, batch: Batch) -> QuerySet[PairwiseVerdict]:
    """The batch's pairwise verdicts that count: a verdict whose call was not read whole (a criterion out
    of range, say) is left out, also when it was saved before such verdicts stopped being kept."""
    unreadable = JudgeCall.objects.filter(
        judge=OuterRef("judge"),
        item=OuterRef("baseline"),
        enhanced=OuterRef("enhanced"),
        sample=0,
    ).exclude(status=JudgeCall.OK)
    return PairwiseVerdict.objects.filter(baseline__batch=batch).exclude(Exists(unreadable))
