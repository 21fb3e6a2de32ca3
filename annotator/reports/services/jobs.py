"""Report exports built in the background: queueing one, building it in the worker, and the job that
computes a large batch's report for its page."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import transaction
from django.utils import timezone

from annotator.counted import counted
from annotator.models import Batch, Job
from annotator.services.jobs import job_enqueue

if TYPE_CHECKING:
    from annotator.reports.exports.export_format import ExportFormat


@transaction.atomic
def export_job_create(*, batch: Batch, fmt: ExportFormat, user, options=None) -> Job:
    """Queue the build of a report export (HTML or JSON) of a large batch, with ``ReportOptions``."""
    if not fmt.background:
        raise ValueError(f"export format {fmt.key!r} does not run in the background")
    params = {"batch_id": batch.pk, "fmt": fmt.key, **({"options": options.to_params()} if options else {})}
    job = Job.objects.create(
        kind=Job.EXPORT,
        created_by=user,
        params=params,
        label=f"{fmt.key.upper()} report of \u201c{batch.name}\u201d",
        output_name=fmt.filename(batch),
        output_type=fmt.content_type,
    )
    job_enqueue(job)
    return job


@transaction.atomic
def report_job_for_page(*, batch: Batch, user):
    """The background job computing a large batch's whole report (the JSON export's job, whose report
    is stored and then serves the page): the person's queued or running one, or a new one."""
    from annotator.reports.exports.formats import EXPORT_FORMATS

    open_job = (
        Job.objects.filter(
            kind=Job.EXPORT,
            created_by=user,
            state__in=(Job.QUEUED, Job.RUNNING),
            params__batch_id=batch.pk,
            params__fmt="json",
        )
        .exclude(params__has_key="options")
        .order_by("-pk")
        .first()
    )
    return open_job or export_job_create(batch=batch, fmt=EXPORT_FORMATS["json"], user=user)


def export_job_run(job: Job, update) -> None:
    """Build a report export (``JOB_KINDS["export"]``)."""
    # Imported here: the web process queues exports, and only the worker needs the report stack.
    from annotator.reports.exports.formats import EXPORT_FORMATS, export_bytes
    from annotator.reports.selectors.options import ReportOptions, report_with_options

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
