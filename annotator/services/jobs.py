"""Background jobs: queue long uploads and report builds, and carry them out in the worker.

The web request creates a ``Job`` row and queues ``annotator.tasks.run_job`` once the row is
committed; the worker (``manage.py db_worker``) runs it and writes progress and outcome to the row,
which the status page polls. A job that fails keeps its input (the uploaded file) and shows its
error; an upload is saved in one transaction, so a failure saves nothing and can be tried again.
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone

from annotator.imports.errors import FileRefused, ImportRefused
from annotator.models import Batch, Job

log = logging.getLogger(__name__)
MAX_ERRORS_KEPT = 200
EXPORT_TYPES = {"json": "application/json", "html": "text/html; charset=utf-8"}


def _enqueue(job: Job) -> None:
    from annotator.tasks import run_job

    transaction.on_commit(lambda: run_job.enqueue(job_id=str(job.pk)))


@transaction.atomic
def upload_job_create(*, pending: dict, data: bytes, user) -> Job:
    """Queue the save of a confirmed upload; the file travels in the job row."""
    what = "batch" if pending["mode"] == "batch" else "annotations for"
    job = Job.objects.create(
        kind=Job.UPLOAD, created_by=user, params=pending, payload=data,
        label=f"Upload of {pending['filename']} ({what} \u201c{pending['name']}\u201d, {len(data):,} bytes)",
    )
    _enqueue(job)
    return job


@transaction.atomic
def export_job_create(*, batch: Batch, fmt: str, filename: str, user) -> Job:
    """Queue the build of a report export (HTML or JSON) of a large batch."""
    if fmt not in EXPORT_TYPES:
        raise ValueError(f"export format {fmt!r} does not run in the background")
    job = Job.objects.create(
        kind=Job.EXPORT, created_by=user, params={"batch_id": batch.pk, "fmt": fmt},
        label=f"{fmt.upper()} report of \u201c{batch.name}\u201d", output_name=filename,
        output_type=EXPORT_TYPES[fmt],
    )
    _enqueue(job)
    return job


@transaction.atomic
def job_retry(*, job: Job) -> Job:
    """Queue a failed job again (its input was kept)."""
    if job.state != Job.FAILED:
        raise ValueError("only a failed job can be tried again")
    job.state, job.step, job.message, job.errors = Job.QUEUED, "", "", []
    job.started_at = job.finished_at = None
    job.save(update_fields=["state", "step", "message", "errors", "started_at", "finished_at"])
    _enqueue(job)
    return job


def _update(job: Job, **fields) -> None:
    for key, value in fields.items():
        setattr(job, key, value)
    Job.objects.filter(pk=job.pk).update(**fields)


def job_run(*, job_id: str) -> str:
    """Carry out a queued job (in the worker). Returns its final state.

    A refused upload ends as ``failed`` with its row errors; any other exception is recorded on
    the job and raised again, so the task queue records the failure too.
    """
    job = Job.objects.filter(pk=job_id).first()
    if job is None or job.finished:
        return job.state if job else "missing"
    _update(job, state=Job.RUNNING, started_at=timezone.now(), attempts=job.attempts + 1, step="Starting")
    try:
        if job.kind == Job.UPLOAD:
            _run_upload(job)
        else:
            _run_export(job)
    except Exception as exc:
        log.exception("job %s failed", job.pk)
        _update(job, state=Job.FAILED, finished_at=timezone.now(), step="",
                message=f"The job stopped with an error ({type(exc).__name__}: {str(exc)[:500]}). "
                        + ("Nothing was saved; the file is kept, so you can try again."
                           if job.kind == Job.UPLOAD else "You can try again."))
        raise
    return job.state


def _run_upload(job: Job) -> None:
    from annotator.services.uploads import pending_upload_save

    data = bytes(job.payload or b"")
    _update(job, step=f"Checking and saving {len(data):,} bytes in one transaction")
    try:
        message = pending_upload_save(pending=job.params, data=data, user=job.created_by)
    except FileRefused as exc:
        _refused(job, str(exc), [])
        return
    except ImportRefused as exc:
        ordered = sorted(exc.errors, key=lambda e: e.sort_key)
        errors = [{"row": e.row, "column": e.column, "message": e.message} for e in ordered]
        _refused(job, f"{len(errors)} problem{'s' if len(errors) != 1 else ''}: nothing was saved.", errors)
        return
    _update(job, state=Job.DONE, finished_at=timezone.now(), step="", message=message, payload=None)


def _refused(job: Job, message: str, errors: list[dict]) -> None:
    _update(job, state=Job.FAILED, finished_at=timezone.now(), step="", message=message,
            errors=errors[:MAX_ERRORS_KEPT])


def _run_export(job: Job) -> None:
    from annotator.exports.report_html import report_html
    from annotator.exports.report_json import report_json
    from annotator.selectors.reports import batch_report

    batch = Batch.objects.get(pk=job.params["batch_id"])
    _update(job, step=f"Computing agreement statistics for {batch.items.count():,} items")
    report = batch_report(batch=batch)
    _update(job, step=f"Writing the {job.params['fmt'].upper()} file")
    body = {"json": report_json, "html": report_html}[job.params["fmt"]](report)
    output = body.encode("utf-8") if isinstance(body, str) else bytes(body)
    _update(job, state=Job.DONE, finished_at=timezone.now(), step="", output=output,
            message=f"Built {len(output):,} bytes.")
