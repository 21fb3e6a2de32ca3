"""The background job that computes a large batch's report for its page."""

from __future__ import annotations

from django.db import transaction

from annotator.models import Batch, Job


@transaction.atomic
def report_job_for_page(*, batch: Batch, user):
    """The background job computing a large batch's whole report (the JSON export's job, whose report
    is stored and then serves the page): the person's queued or running one, or a new one."""
    from annotator.reports.exports.formats import EXPORT_FORMATS
    from annotator.services.jobs import export_job_create

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
