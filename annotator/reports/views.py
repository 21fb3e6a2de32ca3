"""Researcher pages: the batch list, a batch's report, its exports, and an item for adjudication.

The report's judge pages (its judge sections, cards, disagreements) are in ``annotator.judges.views.report``.
"""

from django.conf import settings
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET

from annotator.models import Batch, Item
from annotator.reports.exports.formats import EXPORT_FORMATS, export_bytes, export_chunks
from annotator.reports.selectors.page import report_page_context, report_page_ready
from annotator.reports.selectors.rows import batches_for_reports, item_report
from annotator.reports.selectors.sections import batch_has_sections
from annotator.reports.services.jobs import export_job_create, report_job_for_page
from annotator.roles import researcher_required
from annotator.selectors.streams import stream_of_batch


@require_GET
@researcher_required
def report_list(request):
    return render(request, "annotator/reports_list.html", {"batches": batches_for_reports()})


@require_GET
@researcher_required
def report_batch(request, batch_id):
    batch = get_object_or_404(Batch, pk=batch_id)
    sort = request.GET.get("sort", "")
    if batch.items.count() > settings.ANNOTATOR_BACKGROUND_REPORT_ITEMS and not report_page_ready(
        batch=batch, sort=sort
    ):
        # A large batch's report is computed by the worker; once stored, this page is drawn from it.
        return redirect("job_status", job_id=report_job_for_page(batch=batch, user=request.user).pk)
    context = report_page_context(batch=batch, sort=sort)
    context["has_judges"] = batch_has_sections(batch=batch)  # the further sections load after the page
    # The exports of judge data are linked only when a judge section has rows (comparisons alone do not).
    context["has_judge_data"] = batch_has_sections(batch=batch, judges_only=True)
    context["exports"] = EXPORT_FORMATS.values()
    context["stream_name"] = stream_of_batch(batch_id=batch.pk)
    return render(request, "annotator/report.html", context)


@require_GET
@researcher_required
def report_export(request, batch_id, fmt):
    export = EXPORT_FORMATS.get(fmt)
    if export is None:
        raise Http404("Unknown export format.")
    batch = get_object_or_404(Batch, pk=batch_id)
    if export.background and batch.items.count() > settings.ANNOTATOR_BACKGROUND_REPORT_ITEMS:
        job = export_job_create(batch=batch, fmt=export, user=request.user)
        return redirect("job_status", job_id=job.pk)  # built by the worker; the page shows progress
    if export.zipped is not None:  # a folder (the Hugging Face dataset) comes as one zip
        response = HttpResponse(export_bytes(export, batch=batch), content_type=export.content_type)
        response["Content-Disposition"] = f'attachment; filename="{export.filename(batch)}"'
        return response
    chunks = export_chunks(export, batch=batch)
    # Tables read row by row stream; report-based exports are built whole first (a failure is a clean 500).
    response = (
        StreamingHttpResponse(chunks, content_type=export.content_type)
        if export.from_batch
        else HttpResponse("".join(chunks), content_type=export.content_type)
    )
    response["Content-Disposition"] = f'attachment; filename="{export.filename(batch)}"'
    return response


@require_GET
@researcher_required
def report_item(request, item_pk):
    item = get_object_or_404(Item.objects.select_related("batch"), pk=item_pk)
    return render(request, "annotator/report_item.html", {"item": item, **item_report(item=item)})
