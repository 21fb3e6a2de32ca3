"""Researcher pages: the batch list, a batch's report, its exports, and an item for adjudication."""

from django.conf import settings
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.text import slugify
from django.views.decorators.http import require_GET

from annotator.exports.formats import EXPORT_FORMATS, export_bytes, export_chunks
from annotator.judges.exports.card import CARD_EXPORTS
from annotator.exports.report_html import report_context
from annotator.judges.forms.judges import DisagreementFilterForm
from annotator.models import Batch, Item, Judge
from annotator.judges.models.judge import OVERALL
from annotator.roles import researcher_required
from annotator.judges.selectors.card import judge_card, judge_has_work
from annotator.judges.selectors.disagreements import (
    MAX_ROWS,
    judge_dimensions,
    judge_disagreements,
    judge_systems,
)
from annotator.selectors.report_page import (
    batch_has_judges,
    judge_sections,
    report_without_judges,
)
from annotator.selectors.report_rows import batches_for_reports, item_report
from annotator.selectors.reports import batch_report
from annotator.services.jobs import export_job_create


@require_GET
@researcher_required
def report_list(request):
    return render(request, "annotator/reports_list.html", {"batches": batches_for_reports()})


@require_GET
@researcher_required
def report_batch(request, batch_id):
    batch = get_object_or_404(Batch, pk=batch_id)
    context = report_context(report_without_judges(batch=batch), sort=request.GET.get("sort", ""))
    context["has_judges"] = batch_has_judges(batch=batch)  # their sections load after the page
    context["exports"] = EXPORT_FORMATS.values()
    return render(request, "annotator/report.html", context)


@require_GET
@researcher_required
def report_judges(request, batch_id):
    """The judge sections of the report page, asked for once the rest is on screen."""
    batch = get_object_or_404(Batch, pk=batch_id)
    sections = judge_sections(batch=batch)
    # The sections link to each judge's card by the report's batch id, as on the whole page. Without
    # htmx (the report's <noscript> link) the same sections come as a page with the site's styles.
    template = "annotator/_report_judge_sections.html" if request.htmx else "annotator/report_judges.html"
    return render(request, template,
                  {"sections": sections, "links": True, "report": {"batch_id": batch.pk}, "batch": batch})


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
    response = (StreamingHttpResponse(chunks, content_type=export.content_type) if export.from_batch
                else HttpResponse("".join(chunks), content_type=export.content_type))
    response["Content-Disposition"] = f'attachment; filename="{export.filename(batch)}"'
    return response


@require_GET
@researcher_required
def report_item(request, item_pk):
    item = get_object_or_404(Item.objects.select_related("batch"), pk=item_pk)
    return render(request, "annotator/report_item.html", {"item": item, **item_report(item=item)})


def _card(batch_id, judge_id):
    batch = get_object_or_404(Batch, pk=batch_id)
    judge = get_object_or_404(Judge, pk=judge_id)
    if not judge_has_work(batch=batch, judge=judge):  # before the report is computed: a wrong id is a quick 404
        raise Http404("This judge has no scores or verdicts in this batch.")
    card = judge_card(report=batch_report(batch=batch), judge=judge)
    if card is None:
        raise Http404("This judge has no scores or verdicts in this batch.")
    return card


@require_GET
@researcher_required
def report_judge_card(request, batch_id, judge_id):
    return render(request, "annotator/judge_card.html", {"card": _card(batch_id, judge_id)})


@require_GET
@researcher_required
def report_judge_card_export(request, batch_id, judge_id, card_fmt):
    if card_fmt not in CARD_EXPORTS:
        raise Http404("Unknown export format.")
    card = _card(batch_id, judge_id)
    content_type, render_card = CARD_EXPORTS[card_fmt]
    response = HttpResponse(render_card(card), content_type=content_type)
    filename = f"{slugify(card.batch_name) or 'batch'}-{slugify(card.judge.name) or 'judge'}-card.{card_fmt}"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@require_GET
@researcher_required
def report_judge_disagreements(request, batch_id, judge_id):
    batch = get_object_or_404(Batch, pk=batch_id)
    judge = get_object_or_404(Judge, pk=judge_id)
    dimensions = judge_dimensions(batch=batch, judge=judge)
    if not dimensions:
        raise Http404("This judge has no scores in this batch.")
    labels = [(d, "Overall HCS" if d == OVERALL else batch.rubric_obj.dimension(d).label) for d in dimensions]
    form = DisagreementFilterForm(request.GET or None, dimensions=labels, systems=judge_systems(batch=batch, judge=judge))
    valid = form.is_valid() if form.is_bound else True
    filters = form.cleaned_data if form.is_bound and valid else {}
    rows = judge_disagreements(batch=batch, judge=judge, **filters) if valid else []
    context = {"batch": batch, "judge": judge, "form": form, "rows": rows, "max_rows": MAX_ROWS, "labels": dict(labels)}
    return render(request, "annotator/judge_disagreements.html", context, status=200 if valid else 400)
