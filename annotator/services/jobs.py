"""Background jobs: queue long uploads and report builds (the worker side is ``job_runner``).

The web request creates a ``Job`` row and queues ``annotator.tasks.run_job`` once the row is
committed; the worker (``manage.py db_worker``) runs it (``annotator.services.job_runner``) and
writes progress and outcome to the row, which the status page polls. A job that fails keeps its
input (the uploaded file) and shows its error; an upload is saved in one transaction with the job's
end, so a failure saves nothing and can be tried again, and a saved upload's job says done.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone
from django.utils.module_loading import import_string

from annotator.job_kinds import job_kind
from annotator.models import Job
from annotator.selectors.jobs import job_worker_gone

# The worker's task, by the path the queue knows it by: ``annotator.tasks`` is the worker's way in,
# above the services it runs, so the services name it rather than import it.
RUN_JOB = "annotator.tasks.run_job"


def job_enqueue(job: Job) -> None:
    """Queue ``job`` for the worker once the transaction that created it commits."""
    transaction.on_commit(lambda: import_string(RUN_JOB).enqueue(job_id=str(job.pk)))


@transaction.atomic
def upload_job_create(*, pending: dict, data: bytes, user, confirm_key: str | None = None) -> Job:
    """Queue the save of a confirmed upload; the file travels in the job row. ``confirm_key`` lets the
    upload page find the job when the confirm is sent again."""
    what = {"batch": "batch", "items": "items for"}.get(pending["mode"], "annotations for")
    params = {**pending, "confirm_key": confirm_key} if confirm_key else pending
    job = Job.objects.create(
        kind=Job.UPLOAD,
        created_by=user,
        params=params,
        payload=data,
        label=f"Upload of {pending['filename']} ({what} \u201c{pending['name']}\u201d, {len(data):,} bytes)",
    )
    job_enqueue(job)
    return job


@transaction.atomic
def job_retry(*, job: Job) -> Job:
    """Queue a failed (or cancelled) job again; its input was kept, and a judge run resumes where it stopped."""
    if job.state not in (Job.FAILED, Job.CANCELLED):
        raise ValueError("only a failed or cancelled job can be tried again")
    job.params = job_kind(job).retry_params(job)
    job.state, job.step, job.message, job.errors = Job.QUEUED, "", "", []
    job.started_at = job.finished_at = None
    job.cancel_requested = False
    job.save(
        update_fields=[
            "state",
            "step",
            "message",
            "errors",
            "started_at",
            "finished_at",
            "cancel_requested",
            "params",
        ]
    )
    job_enqueue(job)
    return job


@transaction.atomic
def job_reclaim(*, job: Job) -> Job:
    """End a running job whose worker is gone (``selectors.jobs.job_worker_gone``): done when the database
    holds its work (its kind's ``saved``), else failed, or cancelled when someone had asked it to stop,
    and what it held released (its kind's ``release``). Any other job is returned as it is."""
    # Read unlocked first: a poll of a live job opens no transaction (on SQLite a write lock).
    if job.state != Job.RUNNING or not job_worker_gone(job):
        return job
    with transaction.atomic():
        # A row locked by another transaction: the dead worker's save, whose commit the database has not
        # settled yet (its connection still open). It is read again on the next poll, once settled.
        locked = Job.objects.select_for_update(skip_locked=True).defer("payload", "output").filter(pk=job.pk)
        current = locked.first()
        if current is None:
            return job
        if current.state == Job.RUNNING and job_worker_gone(current):
            _end_gone(current, Job.CANCELLED if current.cancel_requested else Job.FAILED)
    return current


def _end_gone(job: Job, state: str) -> None:
    """End a running job whose worker is gone (the caller holds its row lock), and release what it held.
    A job whose work the database holds although its end was not recorded (its kind's ``saved``) ends
    done, as what it saved says, not failed."""
    kind = job_kind(job)
    done = kind.saved_end(job)
    if done is not None:
        for key, value in done.items():
            setattr(job, key, value)
        job.save(update_fields=list(done))
        return
    job.state, job.finished_at, job.step, job.message = state, timezone.now(), "", kind.gone
    job.save(update_fields=["state", "finished_at", "step", "message"])
    kind.release_held(job)


@transaction.atomic
def job_cancel(*, job: Job) -> Job:
    """Stop a queued job at once, or ask a running job whose kind can stop (a judge run: after the calls in
    flight) to stop; a running job whose worker is gone is cancelled at once."""
    job = Job.objects.select_for_update().defer("payload", "output").get(pk=job.pk)
    if job.state == Job.RUNNING and job_worker_gone(job):
        _end_gone(job, Job.CANCELLED)
    elif job.state == Job.QUEUED:
        job.state, job.finished_at, job.message = (
            Job.CANCELLED,
            timezone.now(),
            "Cancelled before it started.",
        )
        job.save(update_fields=["state", "finished_at", "message"])
    elif job.state == Job.RUNNING and job_kind(job).stopping:
        job.cancel_requested = True
        job.save(update_fields=["cancel_requested"])
    return job
