"""The kinds of background job, in one table: ``JOB_KINDS``.

A feature joins the worker by one line here. Each kind names the function the worker runs, by dotted
path so that neither the web process nor the core imports the feature's package to queue, list or stop
a job, and what people are told when such a job fails, loses its worker or is asked to stop.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.utils.module_loading import import_string

from annotator.models import Job


@dataclass(frozen=True)
class JobKind:
    # runner(job, update) carries the job out in the worker; update(job, **fields) writes the job row.
    runner: str
    gone: str  # the message of a running job whose worker is gone (killed, restarted)
    failed: str = "You can try again."  # follows the error of a job that raised
    # What a stop request of a running job is told; empty: it cannot be stopped half-way.
    stopping: str = ""
    # retry(job) -> the params of the next attempt of a failed or cancelled job; empty: the same params.
    retry: str = ""
    # release(job) frees what a job whose worker is gone still holds, in the transaction that fails it;
    # empty: it holds nothing beyond its own row.
    release: str = ""
    # saved(job) -> the fields that end, as done, a job whose worker is gone but whose work the database
    # holds (its end not recorded), or None; empty: a job whose worker is gone saved nothing.
    saved: str = ""

    def run(self, job: Job, update: Callable[..., None]) -> None:
        import_string(self.runner)(job, update)

    def retry_params(self, job: Job) -> dict[str, Any]:
        return import_string(self.retry)(job) if self.retry else job.params

    def release_held(self, job: Job) -> None:
        if self.release:
            import_string(self.release)(job)

    def saved_end(self, job: Job) -> dict[str, Any] | None:
        return import_string(self.saved)(job) if self.saved else None


JOB_KINDS: dict[str, JobKind] = {
    Job.UPLOAD: JobKind(
        runner="annotator.uploads.services.confirm.upload_job_run",
        gone="The background worker stopped while saving this upload (it was killed or restarted). Nothing "
        "was saved: an upload is saved in one transaction, with the job's end. The file is kept, so you can "
        "try again.",
        failed="Nothing was saved; the file is kept, so you can try again.",
        saved="annotator.uploads.services.confirm.upload_saved_when_gone",
    ),
    Job.EXPORT: JobKind(
        runner="annotator.reports.services.jobs.export_job_run",
        gone="The background worker stopped while building this report (it was killed or restarted). "
        "You can try again.",
    ),
    # The judges package: a judge run started from the Judges page.
    Job.JUDGE_RUN: JobKind(
        runner="annotator.judges.services.jobs.judge_job_run",
        gone="The background worker stopped during this run (it was killed or restarted). The calls it "
        "finished are saved, and its claim on the judge was released: trying again resumes from there.",
        stopping="Stopping: no new calls; the calls in flight finish and are saved.",
        retry="annotator.judges.services.jobs.judge_job_retry_params",
        release="annotator.judges.services.jobs.judge_job_release",
    ),
    # The streams package: an alert delivered to the webhook, tried again with backoff.
    Job.STREAM_ALERT: JobKind(
        runner="annotator.streams.services.alerts.alert_job_run",
        gone="The background worker stopped while delivering this alert (it was killed or restarted). Each "
        "attempt is logged; trying again sends the same event id, so the receiver acts on it once.",
    ),
}

# A job row whose kind this server no longer lists (a feature taken out): it fails with this message.
UNLISTED = JobKind(runner="", gone="The background worker stopped while running this job. You can try again.")


def job_kind(job: Job) -> JobKind:
    return JOB_KINDS.get(job.kind, UNLISTED)
