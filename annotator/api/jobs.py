"""Background jobs started through the API (a big batch, a big report): poll one, fetch its result.

A job belongs to whoever started it (``annotator.selectors.jobs``, as on the job page): anyone
else's is a 404. As on the job page, a running job whose worker is gone is ended when it is read
(``services.jobs.job_reclaim``), so a client polling only the API sees it fail instead of running on.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.http import HttpResponse
from ninja import Router

from annotator.api.auth import signed_in
from annotator.api.batches import batch_out
from annotator.api.problems import Problem
from annotator.api.schemas import ERRORS, JobOut, job_out
from annotator.models import Batch, Job
from annotator.selectors.jobs import job_of
from annotator.services.jobs import job_reclaim

router = Router(tags=["jobs"])


@router.get(
    "/jobs/{uuid:job_id}",
    response={200: JobOut, **ERRORS},
    auth=signed_in,
    url_name="job",
    summary="A background job's state; poll until `state` is done or failed",
)
def job(request, job_id: UUID):
    return job_out(request, job_reclaim(job=job_of(user=request.user, job_id=job_id)))


@router.get(
    "/jobs/{uuid:job_id}/result",
    response={200: dict[str, Any], **ERRORS},
    auth=signed_in,
    url_name="job_result",
    summary="What a finished job made: the report JSON, a dataset zip, or the batch it saved",
)
def job_result(request, job_id: UUID):
    found = job_reclaim(job=job_of(user=request.user, job_id=job_id, with_output=True))
    if found.state != Job.DONE:
        raise Problem(
            409, f"The job is {found.state}: " + (found.message or "it has not finished; poll its URL.")
        )
    if (
        found.kind == Job.EXPORT
    ):  # the JSON report, or a zipped dataset (its type and name as the job page gives them)
        result = HttpResponse(
            bytes(found.output or b"{}"), content_type=found.output_type or "application/json"
        )
        if found.output_type and found.output_type != "application/json":
            result["Content-Disposition"] = f'attachment; filename="{found.output_name or "download"}"'
        return result
    batch = Batch.objects.filter(name=found.params.get("name")).first()
    if batch is None:
        raise Problem(404, "The batch this job saved no longer exists.")
    return {"message": found.message, "batch": batch_out(request, batch)}
