"""The rating page: next item, submit, skip, and editing one's own annotations."""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache

from django.contrib import messages
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotator.forms.rating import RatingForm, initial_from_annotation
from annotator.roles import annotator_required
from annotator.selectors.queue import (
    annotation_of,
    annotations_of,
    batch_of_own_work,
    batch_open_to,
    conversation_turns,
    item_open_to,
)
from annotator.services.annotations import (
    SubmissionRefused,
    annotation_submit,
    annotation_update,
)
from annotator.services.assignment import (
    AssignmentError,
    assignment_skip,
    item_next_for_annotator,
)
from hcs.rubric import Rubric

ALREADY_SUBMITTED = (
    "You had already submitted this item (from another tab or a retry); "
    "your first submission was kept and nothing was added."
)


@lru_cache(maxsize=64)
def _rubric_panel_html(rubric_key: str, rubric_json: str) -> str:
    # The same for every item of a batch and half the page's rendering time: render it once.
    rubric = Rubric.from_dict(json.loads(rubric_json))
    return render_to_string("annotator/_rubric_panel.html", {"rubric": rubric})  # a SafeString


def _rubric_key(batch) -> tuple[str, str]:
    cached = getattr(batch, "_rubric_key", None)
    if cached is None:
        text = json.dumps(batch.rubric, sort_keys=True)
        cached = batch._rubric_key = (hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest(), text)
    return cached


def _form(item, data=None, initial=None) -> RatingForm:
    key, _ = _rubric_key(item.batch)
    return RatingForm(
        data, initial=initial, rubric=item.batch.rubric_obj, constraints=item.constraints, cache_key=key
    )


def _render_rate(request, *, batch, item=None, form=None, mode="new", errors=(), status=200, **extra):
    context = {"batch": batch, "item": item, "mode": mode, "errors": list(errors), **extra}
    if item is not None:
        form = form or _form(item)
        context.update(
            form=form,
            rubric=batch.rubric_obj,
            rubric_panel=_rubric_panel_html(*_rubric_key(batch)),
            turns=conversation_turns(item),
            action=reverse("annotate_submit", args=[item.pk]) if mode == "new" else request.path,
            skip_action=reverse("annotate_skip", args=[item.pk]),
        )
    template = "annotator/rate.html#rate-area" if request.htmx else "annotator/rate.html"
    return render(request, template, context, status=status)


def _next(request, batch):
    """After a submit or skip: the next item swapped in (htmx) or a redirect to it."""
    if not request.htmx:
        return redirect("annotate_next", batch_id=batch.pk)
    assignment = item_next_for_annotator(batch=batch, annotator=request.user)
    return _render_rate(request, batch=batch, item=assignment.item if assignment else None)


def _found(obj):
    if obj is None:
        raise Http404("Not found, or not open to you.")
    return obj


def _open_item(request, item_pk):
    return _found(item_open_to(user=request.user, item_pk=item_pk))


@require_GET
@annotator_required
def next_item(request, batch_id):
    batch = _found(batch_open_to(user=request.user, batch_id=batch_id))
    assignment = item_next_for_annotator(batch=batch, annotator=request.user)
    return _render_rate(request, batch=batch, item=assignment.item if assignment else None)


@require_POST
@annotator_required
def submit(request, item_pk):
    item = _open_item(request, item_pk)
    form = _form(item, data=request.POST)
    if not form.is_valid():
        errors = [e for field_errors in form.errors.values() for e in field_errors]
        return _render_rate(request, batch=item.batch, item=item, form=form, errors=errors, status=422)
    try:
        result = annotation_submit(item=item, annotator=request.user, **form.payload)
    except SubmissionRefused as exc:
        messages.error(request, str(exc))
    else:
        if result.created:
            messages.success(request, f"Saved your rating of {item.item_id}.")
        else:
            messages.warning(request, ALREADY_SUBMITTED)
    return _next(request, item.batch)


@require_POST
@annotator_required
def skip(request, item_pk):
    item = _open_item(request, item_pk)
    reason = request.POST.get("skip_reason", "")
    try:
        assignment_skip(item=item, annotator=request.user, reason=reason)
    except AssignmentError as exc:
        form = _form(item, data=request.POST)
        return _render_rate(
            request, batch=item.batch, item=item, form=form, errors=[str(exc)], status=422, skip_open=True
        )
    messages.info(request, f"Skipped {item.item_id}.")
    return _next(request, item.batch)


@require_GET
@annotator_required
def mine(request, batch_id):
    batch = _found(batch_of_own_work(user=request.user, batch_id=batch_id))
    annotations = annotations_of(user=request.user, batch=batch)
    return render(request, "annotator/mine.html", {"batch": batch, "annotations": annotations})


@require_http_methods(["GET", "POST"])
@annotator_required
def edit(request, pk):
    annotation = get_object_or_404(annotation_of(user=request.user, pk=pk))
    item = annotation.item
    if request.method == "GET":
        form = _form(item, initial=initial_from_annotation(annotation, item.constraints))
        return _render_rate(request, batch=item.batch, item=item, form=form, mode="edit", annotation=annotation)
    form = _form(item, data=request.POST)
    if not form.is_valid():
        errors = [e for field_errors in form.errors.values() for e in field_errors]
        return _render_rate(
            request, batch=item.batch, item=item, form=form, mode="edit", errors=errors, status=422,
            annotation=annotation,
        )
    annotation_update(annotation=annotation, changed_by=request.user, **form.payload)
    messages.success(request, f"Saved your changes to {item.item_id}.")
    return redirect("annotate_mine", batch_id=item.batch_id)
