"""Whether a batch, or one judge in it, has judge data: indexed existence checks, made before the
costlier pages and sections they decide on. The report's sections name the batch checks in
``REPORT_SECTIONS`` (``present``)."""

from __future__ import annotations

from annotator.models import Batch, Judge, JudgeFailure, JudgeScore, PairwiseVerdict


def batch_has_judge_scores(batch: Batch) -> bool:
    """Scores, or failures to score (the ``judges`` section reports both)."""
    return (
        JudgeScore.objects.filter(item__batch=batch).exists()
        or JudgeFailure.objects.filter(item__batch=batch).exists()
    )


def batch_has_verdicts(batch: Batch) -> bool:
    return PairwiseVerdict.objects.filter(baseline__batch=batch).exists()


def judge_has_work(*, batch: Batch, judge: Judge) -> bool:
    """Whether ``judge`` has scores or verdicts in ``batch`` (before a card is built)."""
    return (
        JudgeScore.objects.filter(judge=judge, item__batch=batch).exists()
        or PairwiseVerdict.objects.filter(judge=judge, baseline__batch=batch).exists()
    )
