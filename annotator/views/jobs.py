"""Background jobs: the status page (polled by htmx, or refreshed by hand), download, retry; /healthz."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from annotator.job_kinds import job_kind
from annotator.models import Job
from annotator.selectors.health import database_problem
from annotator.selectors.jobs import job_of
from annotator.services.jobs import job_cancel, job_reclaim, job_retry


def _own_job(request, job_id, *, with_output: bool = False) -> Job:
    return job_of(user=request.user, job_id=job_id, with_output=with_output)


@require_GET
@login_required
@never_cache
def job_status(request, job_id):
    job = job_reclaim(job=_own_job(request, job_id))  # a job whose worker was killed shows as failed
    template = "annotator/job.html#job-status" if request.htmx else "annotator/job.html"
    return render(request, template, {"job": job, "stopping": job_kind(job).stopping})


@require_GET
@login_required
def job_download(request, job_id):
    job = _own_job(request, job_id, with_output=True)
    if job.state != Job.DONE or job.output is None:
        raise Http404("This job has no file to download.")
    response = HttpResponse(bytes(job.output), content_type=job.output_type or "application/octet-stream")
    response["Content-Disposition"] = f'attachment; filename="{job.output_name or "download"}"'
    return response


@require_POST
@login_required
def job_try_again(request, job_id):
    job = job_reclaim(job=_own_job(request, job_id))
    if job.state not in (Job.FAILED, Job.CANCELLED):
        messages.info(request, "This job has not failed; nothing to try again.")
    else:
        job_retry(job=job)
    return redirect("job_status", job_id=job.pk)


@require_POST
@login_required
def job_stop(request, job_id):
    job = _own_job(request, job_id)
    if job.finished:
        messages.info(request, "This job has already finished.")
        return redirect("job_status", job_id=job.pk)
    job = job_cancel(job=job)
    # A run that stops in its own time says "Stopping" inside the polled status, not as a message:
    # the status drops it once the run has stopped, a message would stay above "Cancelled".
    if job.state == Job.CANCELLED:
        messages.info(request, "Stopped.")
    elif not job_kind(job).stopping:
        messages.info(
            request,
            "This job is being saved in one transaction and cannot be stopped half-way; "
            "it finishes or fails on its own, and a failure saves nothing.",
        )
    return redirect("job_status", job_id=job.pk)


@require_GET
@never_cache
def healthz(request):
    """For load balancers: 200 when this app server's database answers within HEALTHZ_TIMEOUT_S, else 503."""
    problem = database_problem(timeout_s=settings.HEALTHZ_TIMEOUT_S)
    if problem is not None:
        response = JsonResponse({"status": "error", "database": problem}, status=503)
        response["Retry-After"] = "5"
        return response
    return JsonResponse({"status": "ok", "database": "ok"})
