"""The judge parts of the report: the report page's judge sections, each judge's card and its exports,
and the items where a judge and the people disagree most."""

from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.safestring import mark_safe
from django.utils.text import slugify
from django.views.decorators.http import require_GET

from annotator.judges.exports.card import CARD_EXPORTS
from annotator.judges.forms.judges import DisagreementFilterForm
from annotator.judges.models.judge import OVERALL
from annotator.judges.selectors.card import judge_card
from annotator.judges.selectors.disagreements import (
    MAX_ROWS,
    judge_dimensions,
    judge_disagreements,
    judge_systems,
)
from annotator.judges.selectors.presence import judge_has_work
from annotator.models import Batch, Judge
from annotator.reports.selectors.batch_report import batch_report
from annotator.reports.selectors.page import judge_sections_html
from annotator.roles import researcher_required
from annotator.selectors.streams import stream_of_batch


@require_GET
@researcher_required
def report_judges(request, batch_id):
    """The judge sections of the report page, asked for once the rest is on screen."""
    batch = get_object_or_404(Batch, pk=batch_id)
    html = judge_sections_html(batch=batch)  # stored for the batch's revision
    if request.htmx:
        return HttpResponse(html)
    # Without htmx (the report's <noscript> link) the same sections come as a page with the site's styles;
    # the fragment was rendered by our own template with autoescaping.
    return render(request, "annotator/report_judges.html", {"sections_html": mark_safe(html), "batch": batch})


def _card(batch_id, judge_id):
    batch = get_object_or_404(Batch, pk=batch_id)
    judge = get_object_or_404(Judge, pk=judge_id)
    # Before the report is computed, so a wrong id is a quick 404.
    if not judge_has_work(batch=batch, judge=judge):
        raise Http404("This judge has no scores or verdicts in this batch.")
    card = judge_card(report=batch_report(batch=batch), judge=judge)
    if card is None:
        raise Http404("This judge has no scores or verdicts in this batch.")
    return card


@require_GET
@researcher_required
def report_judge_card(request, batch_id, judge_id):
    card = _card(batch_id, judge_id)
    stream_name = stream_of_batch(batch_id=card.batch_id)
    return render(request, "annotator/judge_card.html", {"card": card, "stream_name": stream_name})


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
    form = DisagreementFilterForm(
        request.GET or None, dimensions=labels, systems=judge_systems(batch=batch, judge=judge)
    )
    valid = form.is_valid() if form.is_bound else True
    filters = form.cleaned_data if form.is_bound and valid else {}
    rows = judge_disagreements(batch=batch, judge=judge, **filters) if valid else []
    context = {
        "batch": batch,
        "judge": judge,
        "form": form,
        "rows": rows,
        "max_rows": MAX_ROWS,
        "labels": dict(labels),
    }
    return render(request, "annotator/judge_disagreements.html", context, status=200 if valid else 400)
