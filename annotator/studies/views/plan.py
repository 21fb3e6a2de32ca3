"""The report's Plan panel: a batch as a pilot for N items × k annotators (a thin view over studies.planning)."""

from __future__ import annotations

from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from annotator.models import Batch
from annotator.roles import researcher_required
from hcs.defaults import DEFAULT_EPSILON


@require_GET
@researcher_required
def report_plan(request, batch_id):
    from annotator.reports.selectors.batch_report import batch_report
    from annotator.studies.planning import PlanError, parse_plan_request, study_plan

    batch = get_object_or_404(Batch, pk=batch_id)
    query = request.GET
    form = {
        "items": query.get("items", ""),
        "k": query.get("k", batch.k),
        "target_width": query.get("target_width", ""),
    }
    context = {"batch": batch, "form": form, "plan": None, "error": None}
    status = 200
    if form["items"]:
        try:
            items, k, width = parse_plan_request(**form)
            arrays = batch_report(batch=batch, n_resamples=0, with_sections=False).arrays
            context["plan"] = study_plan(
                batch=batch, arrays=arrays, items=items, k=k, target_width=width, epsilon=DEFAULT_EPSILON
            )
        except PlanError as exc:
            context["error"], status = str(exc), 400
    template = "annotator/plan.html#plan-panel" if request.htmx else "annotator/plan.html"
    return render(request, template, context, status=status)
