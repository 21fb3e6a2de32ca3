"""Background jobs as their owner sees them: a job belongs to whoever started it."""

from __future__ import annotations

from django.shortcuts import get_object_or_404

from annotator.models import Job


def job_of(*, user, job_id, with_output: bool = False) -> Job:
    """The user's own job (404 for anyone else's, or none); the output is read only when asked for."""
    jobs = Job.objects.defer("payload") if with_output else Job.objects.defer("payload", "output")
    return get_object_or_404(jobs, pk=job_id, created_by=user)


def upload_confirmed_job(*, user, key: str) -> Job | None:
    """The upload job an earlier confirm of the same pending upload left (``services.uploads.confirm_key``)."""
    return (Job.objects.defer("payload", "output").filter(kind=Job.UPLOAD, created_by=user, params__confirm_key=key)
            .order_by("-created_at").first())
