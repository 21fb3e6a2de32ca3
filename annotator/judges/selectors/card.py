"""A judge card: everything a paper's appendix needs about one judge on one batch, read from the report.

The calibration, probes and position results are the report's own (one computation, one set of
numbers); this module adds the judge's configuration and its version history. A judge version is a
change of template text (``run_judge`` scores changed text into "NAME (template V #hash)"), of model or
of parameters; the history lists the sibling versions and, per version, the distinct configurations its
calls were made with.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Max, Min, Q, Sum

from annotator.judges.models.judge import OVERALL, VERSION_MARK
from annotator.judges.selectors.calibration_set import SetCalibration, set_calibration
from annotator.judges.selectors.judges import JudgeDimensionRow
from annotator.judges.selectors.probes import PositionResult
from annotator.models import Batch, Judge, JudgeCall, JudgeScore, PairwiseVerdict
from annotator.reports.exports.methods import methods_paragraph
from annotator.reports.selectors.batch_report import BatchReport
from hcs.calibration.alt_test import DEFAULT_EPSILON


def _stamp(value) -> str | None:
    return value.isoformat() if value else None


@dataclass(frozen=True)
class JudgeVersion:
    judge: Judge
    current: bool
    n_scores: int  # in this batch
    configurations: tuple[
        dict[str, Any], ...
    ]  # distinct (model, template version, hash, params) of its calls
    spearman: dict[str, float | None]  # dimension → Spearman ρ with the human mean in this batch

    def to_json(self) -> dict[str, Any]:
        j = self.judge
        return {
            "name": j.name,
            "current": self.current,
            "model": j.model,
            "template": j.template,
            "template_version": j.template_version,
            "template_hash": j.template_hash,
            "params": {k: v for k, v in j.params.items() if k != "scale_warnings"},
            "created_at": _stamp(j.created_at),
            "n_scores": self.n_scores,
            "configurations": list(self.configurations),
            "spearman": self.spearman,
        }


@dataclass(frozen=True)
class JudgeCard:
    judge: Judge
    batch_id: int
    batch_name: str
    k: int
    rows: tuple[JudgeDimensionRow, ...]
    position: PositionResult | None
    versions: tuple[JudgeVersion, ...]
    methods: str
    calibration_set: SetCalibration | None = None  # the versions side by side on the frozen set
    labels: dict[str, str] = field(default_factory=dict)  # dimension key → label
    ppi: tuple[Any, ...] = ()  # annotator.judges.selectors.validation.JudgePPI per dimension, from the report
    jury: dict[str, Any] | None = (
        None  # a jury's members and, per dimension, whether it beats its best member
    )
    spend: dict[str, Any] = field(
        default_factory=dict
    )  # what this judge's calls on the batch cost: judge_spend

    def to_json(self) -> dict[str, Any]:
        current = next(v for v in self.versions if v.current).to_json()
        dimensions = {}
        for row in self.rows:
            dimensions[row.dimension] = {
                "label": row.label,
                **row.to_json(),
                "alt_test_warnings": row.calibration.alt_test.warnings,
            }
        for p in self.ppi:
            entry = dimensions.setdefault(p.dimension, {"label": p.label})
            entry["ppi"], entry["ppi_by_system"] = p.to_json(), p.by_system_json()
        return {
            "judge": self.judge.name,
            "configuration": {
                k: current[k] for k in ("model", "template", "template_version", "template_hash", "params")
            },
            "batch": self.batch_name,
            "k": self.k,
            "dimensions": dimensions,
            "position": self.position.to_json() if self.position else None,
            "versions": [v.to_json() for v in self.versions],
            "calibration_set": self.calibration_set.to_json() if self.calibration_set else None,
            "methods": self.methods,
            "jury": self.jury,
            "spend": self.spend,
        }


def _configurations(judge: Judge) -> tuple[dict[str, Any], ...]:
    rows = (
        JudgeCall.objects.filter(judge=judge)
        .values("model", "template_version", "template_hash", "params")
        .annotate(
            calls=Count("id"),
            cached=Count("id", filter=Q(cached=True)),
            first=Min("created_at"),
            last=Max("created_at"),
        )
        .order_by("first")
    )
    return tuple(
        {**r, "paid": r["calls"] - r["cached"], "first": _stamp(r["first"]), "last": _stamp(r["last"])}
        for r in rows
    )


def judge_spend(*, judge: Judge, batch_id: int) -> dict[str, Any]:
    """What ``judge``'s calls on the batch cost, from the ledger: every paid call, those a rerun superseded
    included; a call served from the response cache is not paid, and a call still ``sent`` has no answer yet.
    ``cost`` per currency is the sum of the calls' ``cost``, as judge_calls.jsonl gives it per call."""
    paid = JudgeCall.ledger.filter(judge=judge, item__batch_id=batch_id, cached=False).exclude(
        status=JudgeCall.SENT
    )
    counts = paid.aggregate(
        calls=Count("id"),
        superseded=Count("id", filter=Q(superseded=True)),
        without_prices=Count("id", filter=Q(cost__isnull=True)),
    )
    by_currency = {
        r["currency"]: r["cost"]
        for r in paid.filter(cost__isnull=False)
        .values("currency")
        .annotate(cost=Sum("cost"))
        .order_by("currency")
    }
    return {**counts, "cost": by_currency}


def judge_card(*, report: BatchReport, judge: Judge) -> JudgeCard | None:
    """The card of ``judge`` on the report's batch; None when the judge has nothing in this batch."""
    section = report.sections.get("judges")
    rows = tuple(section.for_judge(judge.name)) if section else ()
    position = section.positions.get(judge.name) if section else None
    if not rows and position is None:
        return None
    base = judge.base_name
    siblings = Judge.objects.filter(Q(name=base) | Q(name__startswith=base + VERSION_MARK)).order_by(
        "created_at", "id"
    )
    counts = dict(
        JudgeScore.objects.filter(item__batch_id=report.batch_id, judge__in=siblings)
        .values("judge")
        .annotate(n=Count("id"))
        .values_list("judge", "n")
    )
    verdicts = dict(
        PairwiseVerdict.objects.filter(baseline__batch_id=report.batch_id, judge__in=siblings)
        .values("judge")
        .annotate(n=Count("id"))
        .values_list("judge", "n")
    )
    versions = tuple(
        JudgeVersion(
            judge=s,
            current=s.pk == judge.pk,
            n_scores=counts.get(s.pk, 0) + verdicts.get(s.pk, 0),
            configurations=_configurations(s),
            spearman={
                r.dimension: r.calibration.spearman for r in (section.for_judge(s.name) if section else ())
            },
        )
        for s in siblings
    )
    on_set = None
    labels = {**{d.key: d.label for d in report.rubric.dimensions}, OVERALL: "Overall HCS"}
    if report.arrays is not None:
        on_set = set_calibration(
            batch=Batch.objects.get(pk=report.batch_id),
            arrays=report.arrays,
            versions=list(siblings),
            current=judge,
            epsilon=section.epsilon if section else DEFAULT_EPSILON,
            n_boot=report.n_resamples,
            seed=report.seed,
        )
    return JudgeCard(
        judge=judge,
        batch_id=report.batch_id,
        batch_name=report.batch_name,
        k=report.k,
        rows=rows,
        position=position,
        versions=versions,
        methods=methods_paragraph(report),
        calibration_set=on_set,
        labels=labels,
        ppi=tuple(section.ppi_for(judge.name)) if section else (),
        jury=_jury(judge, rows, section),
        spend=judge_spend(judge=judge, batch_id=report.batch_id),
    )


def _jury(judge: Judge, rows, section) -> dict[str, Any] | None:
    """For a jury: per dimension, its Spearman ρ with the human mean beside its best member's, and which is higher."""
    members = judge.params.get("jury") if isinstance(judge.params, dict) else None
    if not members:
        return None
    dimensions = {}
    for row in rows:
        theirs = [
            (r.calibration.spearman, name)
            for name in members
            for r in (section.for_judge(name) if section else ())
            if r.dimension == row.dimension and r.calibration.spearman is not None
        ]
        best = max(theirs, default=(None, None))
        mine = row.calibration.spearman
        dimensions[row.dimension] = {
            "spearman": mine,
            "best_member": best[1],
            "best_member_spearman": best[0],
            "beats_best_member": None if mine is None or best[0] is None else bool(mine > best[0]),
        }
    return {"members": list(members), "dimensions": dimensions}
