"""A jury: a virtual judge whose scores are its members' means and whose verdicts are their majority, stored as
an ordinary judge so the report's statistics (ceiling, alt-test, probes, PPI) treat it as any other."""

from __future__ import annotations

from collections import defaultdict

from django.db import transaction
from django.utils import timezone

from annotator.judges.services.judges import judge_get_or_create
from annotator.models import Batch, Judge, JudgeScore, PairwiseVerdict
from annotator.uploads.files.errors import ImportRefused
from hcs.calibration.jury import jury_score, jury_verdict

JURY_MODEL = "jury"  # a jury judge's model field; its members are in params["jury"]


def jury_members(*, names: list[str]) -> list[str]:
    """The member names of ``names``: a list of judges, or one saved jury (a judge whose params name its members)."""
    names = [n.strip() for n in names if n.strip()]
    if len(names) == 1:
        saved = Judge.objects.filter(name=names[0]).first()
        if saved is not None and saved.params.get("jury"):
            return list(saved.params["jury"])
    return names


@transaction.atomic
def jury_create(*, batch: Batch, members: list[str], name: str = "") -> tuple[Judge, int, int]:
    """Score ``batch`` with the jury of ``members`` under ``name`` (default ``jury:A+B+...``); returns (the jury
    judge, scores written, verdicts written). Replaces the jury's earlier scores and verdicts in this batch.

    A jury scores an item on a dimension only where every member did, so its mean is over the same members
    throughout. Raises ImportRefused (nothing saved) for fewer than two members, unknown members, a name taken
    by a judge that is not this jury, or members with nothing in common in this batch.
    """
    members = list(dict.fromkeys(m.strip() for m in members if m.strip()))
    if len(members) < 2:
        raise ImportRefused(["a jury needs at least two member judges: --jury J1,J2"])
    found = {j.name: j for j in Judge.objects.filter(name__in=members)}
    missing = [m for m in members if m not in found]
    if missing:
        raise ImportRefused([f"no judge named \u201c{m}\u201d" for m in missing])
    nested = [m for m in members if found[m].params.get("jury")]
    if nested:
        raise ImportRefused([f"\u201c{m}\u201d is itself a jury; list its members instead" for m in nested])
    name = (name or "jury:" + "+".join(members)).strip()
    existing = Judge.objects.filter(name=name).first()
    if (
        existing is not None
        and existing.params.get("jury") != members
        and (existing.params or existing.scores.exists())
    ):
        raise ImportRefused(
            [f"the name \u201c{name}\u201d is taken by another judge or jury; pick another with --judge"]
        )
    scores, verdicts = _member_scores(batch, found, members), _member_verdicts(batch, found, members)
    if not scores and not verdicts:
        raise ImportRefused(
            [
                f"the members have no item (or pair) in common in batch \u201c{batch.name}\u201d, "
                "so the jury has nothing to score: run each member on it first"
            ]
        )
    jury = judge_get_or_create(name=name, model=JURY_MODEL)
    jury.params = {"jury": members}
    jury.save(update_fields=["params"])
    JudgeScore.objects.filter(judge=jury, item__batch=batch).delete()
    PairwiseVerdict.objects.filter(judge=jury, baseline__batch=batch).delete()
    now = timezone.now()
    lo, hi = batch.rubric_obj.scale_min, batch.rubric_obj.scale_max
    JudgeScore.objects.bulk_create(
        JudgeScore(
            judge=jury,
            item_id=item,
            dimension=dimension,
            raw_value=jury_score(values),
            scale_min=lo,
            scale_max=hi,
            value=jury_score(values),
            imported_at=now,
            reason=f"mean of {len(values)} members",
        )
        for (item, dimension), values in scores.items()
    )
    PairwiseVerdict.objects.bulk_create(
        PairwiseVerdict(
            judge=jury,
            baseline_id=b,
            enhanced_id=e,
            swapped=swapped,
            imported_at=now,
            winner=jury_verdict([v.winner for v in votes]),
            baseline_score=_mean([v.baseline_score for v in votes]),
            enhanced_score=_mean([v.enhanced_score for v in votes]),
            reason=f"majority of {len(votes)} members",
        )
        for (b, e, swapped), votes in verdicts.items()
    )
    return jury, len(scores), len(verdicts)


def _mean(values):
    known = [v for v in values if v is not None]
    return jury_score(known) if len(known) == len(values) and known else None


def _member_scores(batch: Batch, found: dict[str, Judge], members: list[str]) -> dict:
    by_key: dict[tuple[int, str], dict[int, float]] = defaultdict(dict)
    rows = JudgeScore.objects.filter(judge__in=[found[m] for m in members], item__batch=batch)
    for judge_id, item, dimension, value in rows.values_list("judge_id", "item_id", "dimension", "value"):
        by_key[(item, dimension)][judge_id] = value
    return {k: [v[found[m].pk] for m in members] for k, v in sorted(by_key.items()) if len(v) == len(members)}


def _member_verdicts(batch: Batch, found: dict[str, Judge], members: list[str]) -> dict:
    by_pair: dict[tuple[int, int, bool], dict[int, PairwiseVerdict]] = defaultdict(dict)
    for verdict in PairwiseVerdict.objects.filter(
        judge__in=[found[m] for m in members], baseline__batch=batch
    ):
        by_pair[(verdict.baseline_id, verdict.enhanced_id, verdict.swapped)][verdict.judge_id] = verdict
    return {
        k: [v[found[m].pk] for m in members] for k, v in sorted(by_pair.items()) if len(v) == len(members)
    }
