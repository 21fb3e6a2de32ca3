"""Shapes shared by several routers: background jobs, row errors, problem details, and a dimension of a
report (generated from the table of agreement statistics)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from ninja import Schema
from ninja.responses import Status
from pydantic import create_model

from annotator.models import Job
from annotator.reports.statistics import json_types


class RowErrorOut(Schema):
    row: int | None
    column: str | None
    message: str


class ProblemOut(Schema):
    """RFC 9457 problem details (served as ``application/problem+json``)."""

    type: str
    title: str
    status: int
    detail: str
    instance: str
    errors: list[dict[str, Any]] | None = None


class JobOut(Schema):
    id: str
    kind: str
    label: str
    state: str  # queued, running, done, failed
    step: str
    message: str
    errors: list[RowErrorOut]
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    url: str
    result_url: str | None


def _dimension_out() -> type[Schema]:
    """One entry of the report's ``dimensions``: its label, every statistic of
    ``annotator.reports.statistics.AGREEMENT_STATISTICS`` and the counts, its distribution."""
    fields: dict[str, Any] = {
        "label": (str, ...),
        **{key: (kind, ...) for key, kind in json_types()},
        "distribution": (dict[str, int], ...),
    }
    return create_model("DimensionAgreementOut", __base__=Schema, **fields)


DimensionAgreementOut = _dimension_out()


ERRORS = {code: ProblemOut for code in (400, 401, 403, 404, 409, 422, 429)}


def job_out(request: HttpRequest, job: Job) -> dict:
    url = request.build_absolute_uri(reverse("api-v1:job", kwargs={"job_id": job.pk}))
    done = job.state == Job.DONE
    return {
        "id": str(job.pk),
        "kind": job.kind,
        "label": job.label,
        "state": job.state,
        "step": job.step,
        "message": job.message,
        "errors": job.errors or [],
        "created_at": job.created_at,
        "started_at": job.started_at,
        "finished_at": job.finished_at,
        "url": url,
        "result_url": request.build_absolute_uri(reverse("api-v1:job_result", kwargs={"job_id": job.pk}))
        if done
        else None,
    }


def accepted(request: HttpRequest, response: HttpResponse, job: Job) -> Status:
    """202 Accepted: the job runs in the background; poll ``Location`` (the job) until it is done."""
    body = job_out(request, job)
    response["Location"] = body["url"]
    return Status(202, body)
