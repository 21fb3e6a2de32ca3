"""Adjudication pages: the widest disagreements of a batch, one item's blind annotations with the
adjudication form, turning it into gold, and granting the adjudicator role for a batch."""

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotator.models import Adjudication, Batch, GoldItem, Item
from annotator.quality.selectors.adjudication import (
    adjudication_queue,
    blind_annotations,
    may_adjudicate,
)
from annotator.quality.services.adjudication import (
    adjudication_save,
    adjudication_to_gold,
    adjudicator_grant,
    adjudicator_revoke,
)
from annotator.rating.forms import RatingForm
from annotator.roles import RESEARCHER, RoleRequired, researcher_required


def _allowed(request, batch_id: int) -> None:
    if not may_adjudicate(user=request.user, batch_id=batch_id):
        raise RoleRequired(
            RESEARCHER,
            "Adjudicating this batch needs the researcher role, or a researcher's grant to adjudicate it.",
        )


def _form(item, data=None, initial=None) -> RatingForm:
    return RatingForm(data, initial=initial, rubric=item.batch.rubric_obj)  # every flag offered, no checklist


@require_GET
@login_required
def queue(request, batch_id):
    _allowed(request, batch_id)
    batch = get_object_or_404(Batch, pk=batch_id)
    return render(
        request,
        "annotator/adjudication_queue.html",
        {"batch": batch, "rows": adjudication_queue(batch=batch)},
    )


@require_http_methods(["GET", "POST"])
@login_required
def item(request, item_pk):
    obj = get_object_or_404(Item.objects.select_related("batch"), pk=item_pk)
    _allowed(request, obj.batch_id)
    existing = Adjudication.objects.filter(item=obj).first()
    status = 200
    if request.method == "POST":
        form = _form(obj, data=request.POST)
        if form.is_valid():
            try:
                adjudication_save(
                    item=obj,
                    adjudicator=request.user,
                    scores=form.payload["scores"],
                    flags=form.payload["flags"],
                    note=form.payload["comment"],
                )
            except ValidationError as exc:
                form.add_error(None, exc)
            else:
                messages.success(request, f"Saved the adjudicated label of {obj.item_id}.")
                return redirect("adjudication_queue", batch_id=obj.batch_id)
        status = 422
    else:
        initial = None
        if existing is not None:
            initial = {
                **{f"score_{k}": v for k, v in existing.scores.items()},
                "flags": existing.flags,
                "comment": existing.note,
            }
        form = _form(obj, initial=initial)
    context = {
        "item": obj,
        "batch": obj.batch,
        "rows": blind_annotations(item=obj),
        "form": form,
        "dimensions": obj.batch.rubric_obj.dimensions,
        "existing": existing,
        "errors": [e for errs in form.errors.values() for e in errs] if form.is_bound else [],
        "later_batches": Batch.objects.exclude(pk=obj.batch_id).order_by("-created_at")[:50],
        "kinds": GoldItem.Kind.choices,
    }
    return render(request, "annotator/adjudication_item.html", context, status=status)


@require_POST
@researcher_required
def to_gold(request, item_pk):
    adjudication = get_object_or_404(Adjudication.objects.select_related("item__batch"), item_id=item_pk)
    target = Batch.objects.filter(pk=request.POST.get("batch") or 0).first()
    try:
        if target is None:
            raise ValidationError("Choose the batch the gold item goes to.")
        gold = adjudication_to_gold(
            adjudication=adjudication, batch=target, kind=request.POST.get("kind", "check")
        )
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(request, f"{gold.item_id} is now a {gold.kind} item of \u201c{target.name}\u201d.")
    return redirect("adjudication_item", item_pk=item_pk)


@require_POST
@researcher_required
def grant(request, batch_id):
    batch = get_object_or_404(Batch, pk=batch_id)
    user = get_user_model().objects.filter(username=request.POST.get("username", "").strip()).first()
    if user is None:
        messages.error(request, "No account has that user name.")
    elif request.POST.get("revoke"):
        adjudicator_revoke(batch=batch, user=user)
        messages.success(request, f"{user.get_username()} no longer adjudicates this batch.")
    else:
        adjudicator_grant(batch=batch, user=user, by=request.user)
        messages.success(request, f"{user.get_username()} may now adjudicate this batch.")
    return redirect("adjudication_queue", batch_id=batch.pk)
