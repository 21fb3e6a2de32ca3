"""Which judges exist and what they have scored, for the judge import page."""

from __future__ import annotations

from django.db.models import Count

from annotator.models import Job, Judge, JudgeScore, PairwiseVerdict


def judges_overview():
    return Judge.objects.annotate(
        n_scores=Count("scores", distinct=True),
        n_verdicts=Count("verdicts", distinct=True),
        n_failures=Count("failures", distinct=True),
        n_batches=Count("scores__item__batch", distinct=True),
    ).order_by("name")


def judge_runs_recent(*, user, limit: int = 10):
    """The judge runs ``user`` started on the Judges page, newest first, with their progress."""
    return Job.objects.filter(kind=Job.JUDGE_RUN, created_by=user).defer("payload", "output")[:limit]


def judge_batches() -> dict[int, list[tuple[int, str]]]:
    """Per judge id, the (id, name) of each batch it scored or gave verdicts in, by name."""
    pairs = set(JudgeScore.objects.values_list("judge_id", "item__batch_id", "item__batch__name").distinct())
    pairs |= set(
        PairwiseVerdict.objects.values_list(
            "judge_id", "baseline__batch_id", "baseline__batch__name"
        ).distinct()
    )
    out: dict[int, list[tuple[int, str]]] = {}
    for judge_id, batch_id, name in sorted(pairs, key=lambda p: (p[2], p[1])):
        out.setdefault(judge_id, []).append((batch_id, name))
    return out
