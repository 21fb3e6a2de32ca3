"""Background jobs as their owner sees them: a job belongs to whoever started it."""

from __future__ import annotations

import os
import socket
from datetime import datetime, timedelta

from django.conf import settings
from django.shortcuts import get_object_or_404
from django.utils import timezone

from annotator.models import Job


def job_of(*, user, job_id, with_output: bool = False) -> Job:
    """The user's own job (404 for anyone else's, or none); the output is read only when asked for."""
    jobs = Job.objects.defer("payload") if with_output else Job.objects.defer("payload", "output")
    return get_object_or_404(jobs, pk=job_id, created_by=user)


def upload_confirmed_job(*, user, key: str) -> Job | None:
    """The upload job an earlier confirm of the same pending upload left (``services.uploads.confirm_key``)."""
    return (
        Job.objects.defer("payload", "output")
        .filter(kind=Job.UPLOAD, created_by=user, params__confirm_key=key)
        .order_by("-created_at")
        .first()
    )


def this_worker() -> str:
    """The name a job records for the process running it."""
    return f"{socket.gethostname()}:{os.getpid()}"


def job_worker_gone(job: Job, *, now: datetime | None = None) -> bool:
    """True when ``job`` is running but its worker process is not: on this machine, the process is
    asked directly; elsewhere, its heartbeat is older than ``ANNOTATOR_JOB_STALE_SECONDS``.

    Asking the process keeps a live SQLite worker (whose heartbeats wait behind its own write
    transaction) from being taken for dead.
    """
    if job.state != Job.RUNNING:
        return False
    host, _, pid = job.worker.rpartition(":")
    if host == socket.gethostname() and pid.isdigit():
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return True
        except PermissionError:  # alive, run by another user
            return False
        return False
    last = job.heartbeat_at or job.started_at
    stale = timedelta(seconds=settings.ANNOTATOR_JOB_STALE_SECONDS)
    return last is None or (now or timezone.now()) - last > stale
