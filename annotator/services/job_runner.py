"""Carrying out a queued job in the worker: the runner ``JOB_KINDS`` lists for its kind (here: an upload
saved in one transaction, or a report built; a judge run is the judges package's).

Progress and outcome go to the ``Job`` row, which the status page polls. Queued by
``annotator.services.jobs``; called by the task ``annotator.tasks.run_job``.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator

from django.conf import settings
from django.db import DatabaseError, connection
from django.utils import timezone

from annotator.counted import counted
from annotator.job_kinds import job_kind
from annotator.models import Batch, Job
from annotator.reports.exports.formats import EXPORT_FORMATS, export_bytes
from annotator.reports.selectors.options import ReportOptions, report_with_options
from annotator.selectors.jobs import this_worker
from annotator.uploads.files.errors import FileRefused, ImportRefused
from annotator.uploads.services.confirm import pending_upload_save, upload_job_done, upload_saved_earlier

log = logging.getLogger(__name__)
MAX_ERRORS_KEPT = 200


def _update(job: Job, **fields) -> None:
    for key, value in fields.items():
        setattr(job, key, value)
    Job.objects.filter(pk=job.pk).update(**fields)


def _fail(job: Job, **fields) -> None:
    """End ``job`` as failed, unless its row says done: a save that committed with its job's end (and
    then lost its connection, or raced a second attempt) is not failed after the fact."""
    if Job.objects.filter(pk=job.pk).exclude(state=Job.DONE).update(state=Job.FAILED, **fields):
        for key, value in {"state": Job.FAILED, **fields}.items():
            setattr(job, key, value)
    else:
        job.refresh_from_db(fields=["state", "message", "finished_at", "params"])


def job_run(*, job_id: str) -> str:
    """Carry out a queued job (in the worker). Returns its final state.

    A refused upload ends as ``failed`` with its row errors; any other exception is recorded on
    the job and raised again, so the task queue records the failure too.
    """
    job = Job.objects.filter(pk=job_id).first()
    if job is None or job.finished:
        return job.state if job else "missing"
    kind = job_kind(job)
    if not kind.runner:
        _update(
            job,
            state=Job.FAILED,
            finished_at=timezone.now(),
            step="",
            message=f"This server does not run jobs of the kind \u201c{job.kind}\u201d.",
        )
        return job.state
    now, me = timezone.now(), this_worker()
    _update(
        job,
        state=Job.RUNNING,
        started_at=now,
        attempts=job.attempts + 1,
        step="Starting",
        worker=me,
        heartbeat_at=now,
    )
    try:
        with _heartbeat(job, me):
            kind.run(job, _update)
    except Exception as exc:
        log.exception("job %s failed", job.pk)
        _fail(
            job,
            finished_at=timezone.now(),
            step="",
            message=f"The job stopped with an error ({type(exc).__name__}: {str(exc)[:500]}). {kind.failed}",
        )
        raise
    return job.state


@contextlib.contextmanager
def _heartbeat(job: Job, me: str) -> Iterator[None]:
    """While the job runs, a thread writes its heartbeat (with its own connection), so other
    machines can tell a live worker from a killed one."""
    stop = threading.Event()

    def beat() -> None:
        try:
            while not stop.wait(settings.ANNOTATOR_JOB_HEARTBEAT_SECONDS):
                try:
                    Job.objects.filter(pk=job.pk, worker=me, state=Job.RUNNING).update(
                        heartbeat_at=timezone.now()
                    )
                except DatabaseError:  # a busy or lost database: the next beat tries again
                    log.warning("job %s: heartbeat not written", job.pk, exc_info=True)
        finally:
            connection.close()

    thread = threading.Thread(target=beat, name=f"job-heartbeat-{job.pk}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def upload_job_run(job: Job, update) -> None:
    """Save a confirmed upload in one transaction (``JOB_KINDS["upload"]``), the job's end with it."""
    data = bytes(job.payload or b"")
    if job.attempts > 1:  # tried again: an earlier attempt may have saved it after all
        done = upload_saved_earlier(
            job, since=job.created_at, how="This upload was already saved by an earlier attempt:"
        )
        if done is not None:
            update(job, **done)
            return
    update(job, step=f"Checking and saving {len(data):,} bytes in one transaction")
    try:
        # The job's end is written in the transaction that saves the upload: a worker killed at any
        # moment leaves a job that says what the database holds (done with it, or nothing saved).
        pending_upload_save(
            pending=job.params,
            data=data,
            user=job.created_by,
            then=lambda saved: update(job, **upload_job_done(saved, job)),
        )
    except FileRefused as exc:
        _refused(job, str(exc), [])
        return
    except ImportRefused as exc:
        ordered = sorted(exc.errors, key=lambda e: e.sort_key)
        errors = [{"row": e.row, "column": e.column, "message": e.message} for e in ordered]
        _refused(job, f"{len(errors)} problem{'s' if len(errors) != 1 else ''}: nothing was saved.", errors)
        return


def _refused(job: Job, message: str, errors: list[dict]) -> None:
    _fail(job, finished_at=timezone.now(), step="", message=message, errors=errors[:MAX_ERRORS_KEPT])


def export_job_run(job: Job, update) -> None:
    """Build a report export (``JOB_KINDS["export"]``)."""
    batch = Batch.objects.get(pk=job.params["batch_id"])
    fmt = EXPORT_FORMATS[job.params["fmt"]]
    update(
        job,
        step=f"Computing agreement statistics for {counted(batch.items.count(), 'item', 'items', grouped=True)}",
    )
    options = ReportOptions(**job.params.get("options", {}))
    report = report_with_options(batch=batch, options=options) if fmt.needs_report else None
    update(job, step=f"Writing the {fmt.key.upper()} file")
    output = export_bytes(fmt, batch=batch, report=report)
    update(
        job,
        state=Job.DONE,
        finished_at=timezone.now(),
        step="",
        output=output,
        message=f"Built {len(output):,} bytes.",
    )
