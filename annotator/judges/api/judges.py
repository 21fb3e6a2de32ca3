"""LLM judges: list them, import their scores and pairwise verdicts, read their calibration (researchers).

Imports go through the same services as the judges page (``judge_scores_import``,
``pairwise_verdicts_import``): the items become a JSONL file read by the file importers, so the
parsing of ``raw_output``, the scale checks and the row-numbered errors are the file import's.
"""

from __future__ import annotations

from typing import Any, Literal

from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from ninja import Query, Router, Schema
from ninja.responses import Status
from pydantic import Field

from annotator.api.auth import researchers
from annotator.api.items import FILENAME, ItemsIn
from annotator.api.reports import ReportQuery, report_or_job
from annotator.api.schemas import ERRORS, JobOut
from annotator.judges.forms.judges import SCALES
from annotator.judges.selectors.listing import judge_batches, judges_overview
from annotator.models import Batch
from hcs.judge_output import JudgeScale

router = Router(tags=["judges"])
Scale = Literal[tuple(value for value, _ in SCALES)]  # type: ignore[valid-type]


class JudgeBatchOut(Schema):
    id: int
    name: str
    calibration_url: str


class JudgeOut(Schema):
    name: str
    model: str
    template: str
    n_scores: int
    n_verdicts: int
    n_failures: int
    n_batches: int
    batches: list[JudgeBatchOut] = Field(description="the batches it judged, each with its calibration")


class _JudgeImportIn(ItemsIn):
    batch_id: int
    judge: str = Field(description="the judge's name; a new name makes a new judge")
    model: str = ""
    template: str = ""


class ScoresIn(_JudgeImportIn):
    """Items: ``item_id``, ``dimension`` (a rubric key or ``overall``), ``score`` — or ``raw_output`` —
    and optional ``reason``."""

    scale: Scale = Field(description="the judge's raw scale")
    lower_is_better: bool = Field(False, description="true when the judge's low scores are the good end")


class VerdictsIn(_JudgeImportIn):
    """Items: ``prompt_id`` (with ``baseline_system``) or ``baseline_item_id`` and ``enhanced_item_id``;
    ``winner`` (baseline, enhanced, tie) and optional ``confidence`` — or ``raw_output``."""

    baseline_system: str | None = None


class ImportedOut(Schema):
    judge: str
    batch_id: int
    imported: int


class CalibrationOut(Schema):
    batch_id: int
    judges: dict[str, Any] = Field(description="per judge × dimension, as `judges` in the JSON export")
    judge_pairwise: dict[str, Any] = Field(description="as `judge_pairwise` in the JSON export")


@router.get(
    "/judges",
    response={200: list[JudgeOut], **ERRORS},
    auth=researchers,
    url_name="judges",
    summary="Judges and what they have scored (researchers)",
)
def judges(request):
    batches = judge_batches()

    def batch(batch_id: int, name: str) -> dict:
        url = reverse("api-v1:calibration", kwargs={"batch_id": batch_id})
        return {"id": batch_id, "name": name, "calibration_url": request.build_absolute_uri(url)}

    return [
        {
            "name": j.name,
            "model": j.model,
            "template": j.template,
            "n_scores": j.n_scores,
            "n_verdicts": j.n_verdicts,
            "n_failures": j.n_failures,
            "n_batches": j.n_batches,
            "batches": [batch(*b) for b in batches.get(j.pk, [])],
        }
        for j in judges_overview()
    ]


def _judge_import(payload: _JudgeImportIn, service, **options) -> Status:
    """Run one of the judges page's import services on the request's items; 201 with the count."""
    batch = get_object_or_404(Batch, pk=payload.batch_id)
    count = service(
        batch=batch,
        judge_name=payload.judge,
        data=payload.jsonl_bytes(),
        filename=FILENAME,
        model=payload.model,
        template=payload.template,
        **options,
    )
    return Status(201, {"judge": payload.judge.strip(), "batch_id": batch.pk, "imported": count})


@router.post(
    "/judges/scores",
    response={201: ImportedOut, **ERRORS},
    auth=researchers,
    url_name="judge_scores",
    summary="Import a judge's scores (researchers)",
)
def judge_scores(request, payload: ScoresIn):
    from annotator.judges.services.judges import (
        judge_scores_import,  # imported by the endpoints that take files
    )

    scale = JudgeScale.parse(payload.scale, higher_is_better=not payload.lower_is_better)
    return _judge_import(payload, judge_scores_import, scale=scale)


@router.post(
    "/judges/verdicts",
    response={201: ImportedOut, **ERRORS},
    auth=researchers,
    url_name="judge_verdicts",
    summary="Import a judge's pairwise verdicts (researchers)",
)
def judge_verdicts(request, payload: VerdictsIn):
    from annotator.judges.services.judges import (
        pairwise_verdicts_import,  # imported by the endpoints that take files
    )

    return _judge_import(payload, pairwise_verdicts_import, baseline_system=payload.baseline_system or None)


@router.get(
    "/batches/{int:batch_id}/calibration",
    response={200: CalibrationOut, 202: JobOut, **ERRORS},
    auth=researchers,
    url_name="calibration",
    summary="Judges against people on a batch (researchers)",
)
def calibration(request, batch_id: int, response: HttpResponse, query: Query[ReportQuery]):
    """Spearman, Kendall, QWK, the human ceiling and the alternative annotator test per judge × dimension,
    and pairwise verdicts against the human preference. A large batch: 202 and a job whose result is
    the whole report (these are its ``judges`` and ``judge_pairwise`` keys)."""
    result = report_or_job(request, response, get_object_or_404(Batch, pk=batch_id), query)
    if isinstance(result, tuple):
        return result
    return {
        "batch_id": batch_id,
        "judges": result.get("judges") or {},
        "judge_pairwise": result.get("judge_pairwise") or {},
    }
