"""The review page: unlabelled items where the judges are least sure, as a table or CSV, and the step that
puts them first in the batch's queue (thin views over annotator.judges.selectors.review and .services)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotator.exports.csv_safe import csv_lines
from annotator.judges.selectors.review import COLUMNS, ReviewError, review_candidates
from annotator.judges.services.review import items_queue_first
from annotator.models import Batch, Judge
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
    moved = items_queue_first(batch=batch, item_ids=[r.item_id for r in rows]) if rows else 0
    messages.success(request, f"Put {moved} item(s) first in the queue of {batch.name}.")
    return redirect("review_items", batch.pk)
