"""A batch's report: the JSON export's schema (README, "JSON schema"), with its options (researchers).

A batch with more items than ``ANNOTATOR_BACKGROUND_REPORT_ITEMS`` is built by the background
worker: 202 and a job whose result is the same JSON.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from ninja import Query, Router, Schema
from pydantic import Field

from annotator.api.auth import researchers
from annotator.api.problems import INVALID_REQUEST, Problem
from annotator.api.schemas import ERRORS, DimensionAgreementOut, JobOut, accepted
from annotator.models import Batch
from annotator.reports.selectors.options import (
    MAX_RESAMPLES,
    ReportOptions,
    report_with_options,
)
from annotator.reports.services.jobs import export_job_create
from hcs.defaults import DEFAULT_EPSILON, DEFAULT_RESAMPLES, DEFAULT_SEED

router = Router(tags=["reports"])


class ReportQuery(Schema):
    epsilon: float = Field(DEFAULT_EPSILON, ge=0, lt=1, description="the alt-test's margin ε for LLM judges")
    resamples: int = Field(
        DEFAULT_RESAMPLES, ge=0, le=MAX_RESAMPLES, description="bootstrap resamples (0: no CIs)"
    )
    seed: int = Field(DEFAULT_SEED, description="bootstrap seed (the same seed gives the same intervals)")

    def options(self) -> ReportOptions:
        return ReportOptions(n_resamples=self.resamples, seed=self.seed, epsilon=self.epsilon)


# The report's other keys are documented in docs/json-schema.md; its dimensions' in the table of statistics.
_REPORT_SCHEMA = {
    "type": "object",
    "additionalProperties": True,
    "properties": {
        "dimensions": {"type": "object", "additionalProperties": DimensionAgreementOut.model_json_schema()}
    },
}


def report_or_job(request, response: HttpResponse, batch: Batch, query: ReportQuery):
    """The report as a dict, or (202, job) when the batch is large enough for the worker."""
    # The formats table and the JSON builder bring the report's statistics: imported on a report request.
    from annotator.reports.exports.formats import EXPORT_FORMATS
    from annotator.reports.exports.json_export import report_to_dict

    options = query.options()
    if options.errors():
        raise Problem(422, "; ".join(options.errors()) + ".", kind=INVALID_REQUEST)
    if batch.items.count() > settings.ANNOTATOR_BACKGROUND_REPORT_ITEMS:
        job = export_job_create(batch=batch, fmt=EXPORT_FORMATS["json"], user=request.user, options=options)
        return accepted(request, response, job)
    return report_to_dict(report_with_options(batch=batch, options=options))


@router.get(
    "/batches/{int:batch_id}/report",
    response={200: dict[str, Any], 202: JobOut, **ERRORS},
    auth=researchers,
    url_name="report",
    summary="Agreement report, as the JSON export (researchers)",
    openapi_extra={"responses": {200: {"content": {"application/json": {"schema": _REPORT_SCHEMA}}}}},
)
def report(request, batch_id: int, response: HttpResponse, query: Query[ReportQuery]):
    """Fleiss' κ, Krippendorff's α, Gwet's AC2 with bootstrap CIs per dimension, systems, annotators,
    disagreements and the LLM-judge sections: exactly the JSON export's schema (``schema_version`` 1)."""
    return report_or_job(request, response, get_object_or_404(Batch, pk=batch_id), query)


@router.post(
    "/batches/{int:batch_id}/exports/hf",
    response={202: JobOut, **ERRORS},
    auth=researchers,
    url_name="report_export_hf",
    summary="Publish as a Hugging Face dataset: a job whose result is the zip",
)
def report_export_hf(request, batch_id: int, response: HttpResponse):
    """Always a background job (202): poll it, then GET its ``result``, a zip of the dataset folder
    ``export_report --format hf`` writes (raters pseudonymous; docs/hf.md)."""
    from annotator.reports.exports.formats import EXPORT_FORMATS

    batch = get_object_or_404(Batch, pk=batch_id)
    return accepted(
        request, response, export_job_create(batch=batch, fmt=EXPORT_FORMATS["hf"], user=request.user)
    )
