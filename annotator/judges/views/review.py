"""The review page: unlabelled items where the judges are least sure, as a table or CSV, the step that
puts them first in the batch's queue, and the recorded draw whose labels the report weights (thin views over
annotator.judges.selectors.review, .draws and annotator.judges.services.review)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotator.counted import counted
from annotator.judges.selectors.draws import DRAW_COLUMNS, draw_in_force, draw_rows, draw_summary
from annotator.judges.selectors.review import COLUMNS, ReviewError, review_candidates
from annotator.judges.services.review import (
    DrawError,
    ranked_queue_first,
    review_draw_make,
    review_draw_retire,
)
from annotator.models import Batch, Judge
from annotator.reports.exports.csv_safe import csv_lines
from annotator.roles import admin_required, researcher_required

DEFAULT_N = 50


def _request_rows(batch: Batch, data):
    n, judges = data.get("n", DEFAULT_N), [j for j in data.getlist("judge") if j]
    return n, judges, review_candidates(batch=batch, n=n, judges=judges or None)


@require_GET
@researcher_required
def review(request, batch_id):
    batch = get_object_or_404(Batch, pk=batch_id)
    names = list(
        Judge.objects.filter(scores__item__batch=batch)
        .distinct()
        .order_by("name")
        .values_list("name", flat=True)
    )
    try:
        n, judges, rows = _request_rows(batch, request.GET)
    except ReviewError as exc:
        context = {
            "batch": batch,
            "names": names,
            "error": str(exc),
            "n": request.GET.get("n", DEFAULT_N),
            "judges": request.GET.getlist("judge"),
            "rows": [],
            "draw": draw_summary(batch),
        }
        return render(request, "annotator/review.html", context, status=400)
    if request.GET.get("format") == "csv":
        response = HttpResponse(
            "".join(csv_lines(COLUMNS, (r.cells() for r in rows))), content_type="text/csv"
        )
        response["Content-Disposition"] = f'attachment; filename="review-{batch.pk}.csv"'
        return response
    context = {
        "batch": batch,
        "names": names,
        "n": n,
        "judges": judges,
        "rows": rows,
        "query": request.GET.urlencode(),
        "draw": draw_summary(batch),
    }
    return render(request, "annotator/review.html", context)


@require_POST
@admin_required
def review_queue_first(request, batch_id):
    batch = get_object_or_404(Batch, pk=batch_id)
    try:
        _, _, rows = _request_rows(batch, request.POST)
    except ReviewError as exc:
        messages.error(request, f"Nothing was moved: {exc}")
        return redirect("review_items", batch.pk)
    try:
        moved = ranked_queue_first(batch=batch, item_ids=[r.item_id for r in rows]) if rows else 0
    except DrawError as exc:
        messages.error(request, f"Nothing was moved: {exc}.")
        return redirect("review_items", batch.pk)
    messages.success(request, f"Put {counted(moved, 'item', 'items')} first in the queue of {batch.name}.")
    return redirect("review_items", batch.pk)


@require_POST
@admin_required
def review_draw(request, batch_id):
    batch = get_object_or_404(Batch, pk=batch_id)
    judges = [j for j in request.POST.getlist("judge") if j]
    try:
        made = review_draw_make(
            batch=batch,
            budget=request.POST.get("budget", ""),
            seed=request.POST.get("seed"),
            judges=judges or None,
            user=request.user,
        )
    except DrawError as exc:
        messages.error(request, f"Nothing was drawn: {exc}.")
        return redirect("review_items", batch.pk)
    drawn = made.rows.filter(drawn=True, labelled_before=False).count()
    messages.success(
        request,
        f"Draw #{made.pk} (budget {made.budget}, seed {made.seed}) drew {counted(drawn, 'item', 'items')} and put them first in the "
        f"queue of {batch.name}. The report now weights their labels.",
    )
    return redirect("review_items", batch.pk)


@require_GET
@researcher_required
def review_draw_csv(request, batch_id):
    batch = get_object_or_404(Batch, pk=batch_id)
    draw = draw_in_force(batch)
    if draw is None:
        messages.error(request, f"Batch {batch.name} has no draw in force.")
        return redirect("review_items", batch.pk)
    rows = draw_rows(draw)
    response = HttpResponse(
        "".join(csv_lines(DRAW_COLUMNS, ([r[c] for c in DRAW_COLUMNS] for r in rows))),
        content_type="text/csv",
    )
    response["Content-Disposition"] = f'attachment; filename="review-draw-{draw.pk}.csv"'
    return response


@require_POST
@admin_required
def review_draw_retire_view(request, batch_id):
    batch = get_object_or_404(Batch, pk=batch_id)
    retired = review_draw_retire(batch=batch)
    if retired is None:
        messages.error(request, f"Batch {batch.name} has no draw in force.")
    else:
        messages.success(request, f"Retired draw #{retired.pk}; the report's panel is back to PPI++.")
    return redirect("review_items", batch.pk)
