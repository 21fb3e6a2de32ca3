"""Which judges exist and what they have scored, for the judge import page."""

from __future__ import annotations

from django.db.models import Count

from annotator.models import Job, Judge, JudgeFailure, JudgeScore, PairwiseVerdict


def judges_overview():
    return Judge.objects.annotate(
        n_scores=Count("scores", distinct=True),
        n_verdicts=Count("verdicts", distinct=True),
        n_failures=Count("failures", distinct=True),
        n_batches=Count("scores__item__batch", distinct=True),
    ).order_by("name")


def judge_runs_recent(*, user, limit: int = 10):
    """The judge runs ``user`` started on the Judges page, newest first, with their progress; each carries
    ``display_label``, which names its judge also for runs queued before labels did."""
    runs = list(Job.objects.filter(kind=Job.JUDGE_RUN, created_by=user).defer("payload", "output")[:limit])
    for run in runs:
        run.display_label = judge_run_display_label(run)
    return runs


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


def judge_failure_batches() -> dict[int, list[tuple[int, str]]]:
    """Per judge id, the (id, name) of each batch holding its unreadable outputs, by name: the page links
    each to that batch's judge calls, where every failed call is listed with its error and raw output."""
    pairs = set(
        JudgeFailure.objects.values_list("judge_id", "item__batch_id", "item__batch__name").distinct()
    )
    out: dict[int, list[tuple[int, str]]] = {}
    for judge_id, batch_id, name in sorted(pairs, key=lambda p: (p[2], p[1])):
        out.setdefault(judge_id, []).append((batch_id, name))
    return out


def judge_run_display_label(job: Job) -> str:
    """The label of a judge run as lists show it. Runs queued before labels named the judge read
    "Judge TEMPLATE with MODEL on ...": their judge's name, kept in the params, is put in front."""
    if job.label.startswith("Judge \u201c") or not job.label.startswith("Judge "):
        return job.label
    p = job.params or {}
    name = p.get("judge") or f"{p.get('template', '')}/{p.get('model', '')}"
    return f"Judge \u201c{name}\u201d: {job.label[len('Judge ') :]}"
