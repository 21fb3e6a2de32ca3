"""Admins watch assignment per batch and release leases."""

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotator.models import Batch
from annotator.rating import hooks
from annotator.rating.selectors import assignment_admin as sel
from annotator.rating.services.assignment import AssignmentError, assignment_release
from annotator.roles import admin_required


@require_GET
@admin_required
def overview(request):
    batches = [(batch, sel.item_states(batch=batch)) for batch in Batch.objects.order_by("name")]
    return render(request, "annotator/assignment_list.html", {"batches": batches})


@require_GET
@admin_required
def batch_assignment(request, batch_id):
    batch = get_object_or_404(Batch, pk=batch_id)
    context = {
        "batch": batch,
        "states": sel.item_states(batch=batch),
        "leases": sel.live_leases(batch=batch),
        "annotators": sel.annotator_counts(batch=batch),
        "capacity": sel.capacity(batch=batch),
        "skips": sel.recent_skips(batch=batch),
        "workers": hooks.workers(batch=batch),
    }
    return render(request, "annotator/assignment_admin.html", context)


@require_POST
@admin_required
def lease_release(request, batch_id, assignment_id):
    batch = get_object_or_404(Batch, pk=batch_id)
    try:
        released = assignment_release(assignment_id=assignment_id, batch=batch)
    except AssignmentError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Released {released.annotator}'s lease on {released.item.item_id}.")
    return redirect("assignment_batch", batch_id=batch.pk)
