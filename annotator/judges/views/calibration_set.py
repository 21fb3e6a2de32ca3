"""A batch's frozen calibration set: see it, mark it, retire it (researchers)."""

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from annotator.counted import counted
from annotator.judges.forms.calibration_set import CalibrationSetForm
from annotator.judges.selectors.calibration_set import calibration_set_of, judge_families, set_item_ids
from annotator.judges.services.calibration_set import (
    CalibrationSetError,
    calibration_set_mark,
    calibration_set_retire,
)
from annotator.models import Batch
from annotator.roles import researcher_required


@require_http_methods(["GET", "POST"])
@researcher_required
def calibration_set(request, batch_id):
    batch = get_object_or_404(Batch, pk=batch_id)
    form = CalibrationSetForm(request.POST or None)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            d = form.cleaned_data
            try:
                chosen = calibration_set_mark(
                    batch=batch,
                    item_ids=d["ids"],
                    sample=d["sample"] if not d["ids"] else None,
                    seed=d["seed"] or 0,
                    note=d["note"],
                    user=request.user,
                )
            except CalibrationSetError as exc:
                form.add_error(None, str(exc))
            else:
                messages.success(
                    request, f"Froze a calibration set of {counted(chosen.items.count(), 'item', 'items')}."
                )
                return redirect("calibration_set", batch.pk)
        status = 400
    chosen = calibration_set_of(batch)
    items = set_item_ids(chosen) if chosen else []
    judges = judge_families(batch) if chosen else []
    context = {
        "batch": batch,
        "form": form,
        "chosen": chosen,
        "items": items,
        "judges": judges,
        "n_batch_items": batch.items.count(),
    }
    return render(request, "annotator/calibration_set.html", context, status=status)


@require_POST
@researcher_required
def calibration_set_retire_view(request, batch_id):
    batch = get_object_or_404(Batch, pk=batch_id)
    if calibration_set_retire(batch=batch):
        messages.success(request, "Retired the calibration set; judge scores are kept. Mark a new one below.")
    return redirect("calibration_set", batch.pk)
