"""What the judges' report sections read, for the batch's report revision (``REPORT_SECTIONS``).

Counts and largest ids of the batch's judge rows: a run that adds, retries or deletes any of them
changes the revision, so a stored report is never served after it.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Max, Q

from annotator.models import (
    Batch,
    CalibrationSet,
    JudgeCall,
    JudgeCriterionScore,
    JudgeFailure,
    JudgeScore,
    PairwiseVerdict,
    ReviewDraw,
)

_CHANGED = {"n": Count("pk"), "last": Max("pk")}


def judges_revision(batch: Batch) -> list[Any]:
    in_batch = Q(item__batch=batch)
    return [
        JudgeScore.objects.filter(in_batch).aggregate(**_CHANGED),
        JudgeFailure.objects.filter(in_batch).aggregate(**_CHANGED),
        JudgeCriterionScore.objects.filter(in_batch).aggregate(**_CHANGED),
        list(CalibrationSet.objects.filter(batch=batch).values_list("pk", "fingerprint", "frozen_at")),
        list(ReviewDraw.objects.filter(batch=batch).order_by("pk").values_list("pk", "retired_at")),
    ]


def pairwise_revision(batch: Batch) -> list[Any]:
    return [
        # A verdict counts only while its call reads as whole (judges.selectors.verdicts.counted_verdicts).
        JudgeCall.objects.filter(item__batch=batch).aggregate(
            **_CHANGED, not_ok=Count("pk", filter=~Q(status=JudgeCall.OK))
        ),
        PairwiseVerdict.objects.filter(baseline__batch=batch).aggregate(**_CHANGED),
    ]
