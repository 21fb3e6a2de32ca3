"""Carrying out a queued job in the worker: the runner ``JOB_KINDS`` lists for its kind (an upload saved
in one transaction is the uploads package's, a report built the reports package's, a judge run the
judges package's).

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

from annotator.job_kinds import job_kind
from annotator.models import Job
from annotator.selectors.jobs import this_worker

log = logging.getLogger(__name__)


def _update(job: Job, **fields) -> None:
    for key, value in fields.items():
        setattr(job, key, value)
    Job.objects.filter(pk=job.pk).update(**fields)


def job_fail(job: Job, **fields) -> None:
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
        job_fail(
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
