"""Researcher actions on the report's annotator table: exclude an annotator, include them again."""

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from annotator.models import Batch
from annotator.quality.services.exclusion import (
    ExclusionError,
    annotator_exclude,
    annotator_include,
)
from annotator.roles import researcher_required


def _back(batch):
    return redirect(reverse("report_batch", args=[batch.pk]) + "#quality")


@require_POST
@researcher_required
def exclude(request, batch_id, user_pk):
    batch = get_object_or_404(Batch, pk=batch_id)
    user = get_object_or_404(
        get_user_model().objects.filter(annotations__item__batch=batch).distinct(), pk=user_pk
    )
    try:
        annotator_exclude(batch=batch, annotator=user, reason=request.POST.get("reason", ""), by=request.user)
    except ExclusionError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Excluded {user.get_username()}; their items are open to others again.")
    return _back(batch)


@require_POST
@researcher_required
def include(request, batch_id, user_pk):
    batch = get_object_or_404(Batch, pk=batch_id)
    user = get_object_or_404(get_user_model().objects.filter(standings__batch=batch).distinct(), pk=user_pk)
    annotator_include(batch=batch, annotator=user)
    messages.success(request, f"{user.get_username()} counts again.")
    return _back(batch)
