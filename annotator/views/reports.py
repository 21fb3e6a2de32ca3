"""Researcher pages: the batch list, a batch's report, its exports, and an item for adjudication."""

from django.conf import settings
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.text import slugify
from django.views.decorators.http import require_GET

from annotator.exports import report_csv
from annotator.exports.judges_csv import judges_csv
from annotator.exports.report_html import report_context, report_html
from annotator.exports.report_json import report_json
from annotator.models import Batch, Item
from annotator.roles import researcher_required
from annotator.selectors.report_rows import batches_for_reports, item_report
from annotator.selectors.reports import batch_report
from annotator.services.jobs import EXPORT_TYPES as BACKGROUND_EXPORTS
from annotator.services.jobs import export_job_create

EXPORTS = {
    "json": "application/json",
    "html": "text/html; charset=utf-8",
    "dimensions.csv": "text/csv; charset=utf-8",
    "items.csv": "text/csv; charset=utf-8",
    "scores.csv": "text/csv; charset=utf-8",
    "annotations.csv": "text/csv; charset=utf-8",
    "judges.csv": "text/csv; charset=utf-8",
}


@require_GET
@researcher_required
def report_list(request):
    return render(request, "annotator/reports_list.html", {"batches": batches_for_reports()})


@require_GET
@researcher_required
def report_batch(request, batch_id):
    batch = get_object_or_404(Batch, pk=batch_id)
    return render(request, "annotator/report.html", report_context(batch_report(batch=batch)))


@require_GET
@researcher_required
def report_export(request, batch_id, fmt):
    if fmt not in EXPORTS:
        raise Http404("Unknown export format.")
    batch = get_object_or_404(Batch, pk=batch_id)
    filename = f"{slugify(batch.name) or 'batch'}-{fmt if '.' in fmt else 'report.' + fmt}"
    if fmt in BACKGROUND_EXPORTS and batch.items.count() > settings.ANNOTATOR_BACKGROUND_REPORT_ITEMS:
        job = export_job_create(batch=batch, fmt=fmt, filename=filename, user=request.user)
        return redirect("job_status", job_id=job.pk)  # built by the worker; the page shows progress
    if fmt == "scores.csv":
        response = StreamingHttpResponse(report_csv.scores_csv(batch=batch), content_type=EXPORTS[fmt])
    elif fmt == "annotations.csv":
        response = StreamingHttpResponse(report_csv.annotations_csv(batch=batch), content_type=EXPORTS[fmt])
    else:
        report = batch_report(batch=batch)
        body = {
            "json": report_json,
            "html": report_html,
            "dimensions.csv": lambda r: "".join(report_csv.dimensions_csv(r)),
            "items.csv": lambda r: "".join(report_csv.items_csv(r)),
            "judges.csv": lambda r: "".join(judges_csv(r)),
        }[fmt](report)
        response = HttpResponse(body, content_type=EXPORTS[fmt])
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@require_GET
@researcher_required
def report_item(request, item_pk):
    item = get_object_or_404(Item.objects.select_related("batch"), pk=item_pk)
    return render(request, "annotator/report_item.html", {"item": item, **item_report(item=item)})
