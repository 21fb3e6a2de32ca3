"""The rating page: next item, submit, skip, and editing one's own annotations."""

from __future__ import annotations

import hashlib
import json
import math
from functools import lru_cache

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from annotator.models import GoldItem
from annotator.quality.selectors.standing import gold_answer_of, training_feedback
from annotator.quality.services.gold import gold_answer_skip, gold_answer_submit
from annotator.rating import hooks
from annotator.rating.forms import (
    RatingForm,
    initial_from_annotation,
    stored_checklist_flags,
)
from annotator.rating.instructions import instructions_html
from annotator.rating.selectors.facts import (
    RatingFacts,
    rating_facts_for_batch,
    rating_facts_for_item,
)
from annotator.rating.selectors.progress import rating_progress
from annotator.rating.selectors.queue import (
    annotation_of,
    annotations_of,
    batch_of_own_work,
    batch_open_to,
    conversation_turns,
    holds_live_lease,
    ratings_final,
)
from annotator.rating.services.annotations import (
    SubmissionRefused,
    annotation_submit,
    annotation_update,
)
from annotator.rating.services.assignment import (
    AssignmentError,
    assignment_skip,
)
from annotator.rating.services.flow import ENDED_TRAINING, rating_next
from annotator.roles import annotator_required
from hcs.quality_rules import WARN
from hcs.rubric import Rubric

NOT_HELD = (
    "This item is not given to you right now (it was never yours, your time on it ran out, or you "
    "already submitted or skipped it), so it is not shown and nothing was saved."
)
CHECK_WARNING = (
    "Some of your recent ratings differ a lot from what careful reading gives. "
    "Please read each prompt and response in full before you score."
)
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
        text = batch.rubric_text
        cached = batch._rubric_key = (hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest(), text)
    return cached


def _form(item, data=None, initial=None, annotation=None) -> RatingForm:
    key, _ = _rubric_key(item.batch)
    stored = stored_checklist_flags(annotation, item.constraints) if annotation is not None else None
    return RatingForm(
        data,
        initial=initial,
        rubric=item.batch.rubric_obj,
        constraints=item.constraints,
        cache_key=key,
        stored_checklist_flags=stored,
    )


def _render_rate(
    request, *, batch, item=None, form=None, mode="new", errors=(), status=200, answer=None, **extra
):
    context = {"batch": batch, "item": item, "mode": mode, "errors": list(errors), **extra}
    if item is not None:
        form = form or _form(item)
        if answer is not None:  # a gold item: the same page, its own form targets
            action = reverse("gold_submit", args=[answer.pk])
            skip_action = reverse("gold_skip", args=[answer.pk])
            context["training"] = item.kind == "training"
        else:
            action = reverse("annotate_submit", args=[item.pk]) if mode == "new" else request.path
            skip_action = reverse("annotate_skip", args=[item.pk])
        context.update(
            form=form,
            rubric=batch.rubric_obj,
            rubric_panel=_rubric_panel_html(*_rubric_key(batch)),
            turns=conversation_turns(item),
            action=action,
            skip_action=skip_action,
            instructions_html=instructions_html(batch),
        )
        if mode == "new":
            context["progress"] = rating_progress(
                batch=batch,
                item=item,
                annotator=request.user,
                lease=extra.get("lease"),
                gold_shown_at=answer.shown_at if answer is not None else None,
                count_gold=extra.get("has_gold", False),
                quota=extra.get("quota"),
            )
    template = "annotator/rate.html#rate-area" if request.htmx else "annotator/rate.html"
    return render(request, template, context, status=status)


def _refuse_answer(request, item, form, errors, **extra):
    """The page again, 422, with the form as posted and why the answer or skip was not taken."""
    return _render_rate(request, batch=item.batch, item=item, form=form, errors=errors, status=422, **extra)


def _go(request, detour: hooks.Detour | None, batch):
    """The page a rating hook sends the annotator to instead (None: no detour), with its warning."""
    if detour is None:
        return None
    if detour.warning:
        messages.warning(request, detour.warning)
    url = reverse(detour.url_name, args=[batch.pk])
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


def _detour(request, facts: RatingFacts, *, sending: bool = False):
    """Where the annotator must go before rating in this batch (None: rate): the study's consent,
    instructions or end. ``sending``: the request carries a rating, which an ended visit does not take."""
    return _go(request, hooks.before_rating(user=request.user, facts=facts, sending=sending), facts.batch)


def _refuse_not_held(request, item, errors=()):
    """A POST about an item the annotator does not hold: say so, without the item's text."""
    return _render_rate(request, batch=item.batch, errors=[NOT_HELD, *errors], refused=True, status=409)


def _render_step(request, facts: RatingFacts):
    """What comes next, once the study's steps (consent, instructions, limits) allow it: the end
    (blocked, or failed training: a crowd worker then leaves with the screen-out code), a gold item,
    or an item on lease; a crowd worker with nothing left gets the completion page."""
    batch = facts.batch
    if (detour := _detour(request, facts)) is not None:
        return detour
    session = _session(batch, facts)
    deadline = session["session_deadline"]
    step = rating_next(batch=batch, annotator=request.user, facts=facts, lease_until=deadline)
    if step.ended == ENDED_TRAINING and (detour := _detour(request, facts)) is not None:
        return detour
    if (
        step.item is None
        and not step.ended
        and (finished := _go(request, hooks.nothing_left(user=request.user, batch=batch), batch)) is not None
    ):
        return finished
    return _render_rate(
        request,
        batch=batch,
        item=step.item,
        answer=step.answer,
        ended=step.ended,
        lease=step.assignment,
        **{**session, "has_gold": step.has_gold, "session_seconds_left": _seconds_left(deadline)},
    )


def _session(batch, facts: RatingFacts) -> dict:
    """What the rating page shows of the study beside the item, on every page that shows an item (a
    form sent back with its errors too): the quota ("up to N more"), the session's end with its
    countdown and time-up notice, and whether the batch has gold items (which number the training)."""
    session = hooks.session(facts=facts)
    return {
        "quota": session.quota,
        "session_deadline": session.deadline,
        "session_seconds_left": _seconds_left(session.deadline),
        "has_gold": facts.rule is not None,
    }


def _seconds_left(deadline) -> int | None:
    # Seconds rather than a clock time: the countdown then runs right on a computer whose clock is off.
    # Rounded up, so the page reaches zero only once the server's deadline has passed: "Finish" at zero
    # then ends the visit instead of showing the item again.
    if deadline is None:
        return None
    return max(0, math.ceil((deadline - timezone.now()).total_seconds()))


def _gold_session(request, batch) -> dict:
    """:func:`_session` for a gold item's form, whose request did not read the batch's facts."""
    return _session(batch, _found(rating_facts_for_batch(user=request.user, batch_id=batch.pk)))


def _next(request, facts: RatingFacts):
    """After a submit or skip: the next item swapped in (htmx) or a redirect to it. ``facts``: the
    request's own, read before the submit or skip changed nothing in them (the lease re-checks the
    standing)."""
    if not request.htmx:
        return redirect("annotate_next", batch_id=facts.batch.pk)
    return _render_step(request, facts)


def _next_after_gold(request, batch):
    """After a gold answer, which may have changed the annotator's standing: read the facts again."""
    if not request.htmx:
        return redirect("annotate_next", batch_id=batch.pk)
    return _render_step(request, _found(rating_facts_for_batch(user=request.user, batch_id=batch.pk)))


def _form_errors(form) -> list[str]:
    return [e for field_errors in form.errors.values() for e in field_errors]


def _found(obj):
    if obj is None:
        raise Http404("Not found, or not open to you.")
    return obj


def _open_item(request, item_pk) -> RatingFacts:
    return _found(rating_facts_for_item(user=request.user, item_pk=item_pk))


@require_GET
@annotator_required
def next_item(request, batch_id):
    return _render_step(request, _found(rating_facts_for_batch(user=request.user, batch_id=batch_id)))


@require_POST
@annotator_required
def submit(request, item_pk):
    facts = _open_item(request, item_pk)
    item = facts.item
    if (detour := _detour(request, facts, sending=True)) is not None:
        return detour
    form = _form(item, data=request.POST)
    if not form.is_valid():
        if not holds_live_lease(user=request.user, item=item):
            return _refuse_not_held(request, item)
        return _refuse_answer(request, item, form, _form_errors(form), **_session(item.batch, facts))
    try:
        result = annotation_submit(item=item, annotator=request.user, **form.payload)
    except SubmissionRefused as exc:
        messages.error(request, str(exc))
    else:
        if result.created:
            facts.note_submitted()
            messages.success(request, "Saved your rating.")
        else:
            messages.warning(request, ALREADY_SUBMITTED)
    return _next(request, facts)


@require_POST
@annotator_required
def skip(request, item_pk):
    facts = _open_item(request, item_pk)
    item = facts.item
    if (detour := _detour(request, facts)) is not None:
        return detour
    reason = request.POST.get("skip_reason", "")
    try:
        assignment_skip(item=item, annotator=request.user, reason=reason)
    except AssignmentError as exc:
        if not holds_live_lease(user=request.user, item=item):
            return _refuse_not_held(request, item, [str(exc)])
        form = _form(item, data=request.POST)
        return _refuse_answer(request, item, form, [str(exc)], skip_open=True, **_session(item.batch, facts))
    messages.info(request, "Skipped that item.")
    return _next(request, facts)


@require_GET
@annotator_required
def mine(request, batch_id):
    batch = _found(batch_of_own_work(user=request.user, batch_id=batch_id))
    annotations = annotations_of(user=request.user, batch=batch)
    final = ratings_final(user=request.user, batch_id=batch.pk)
    return render(
        request, "annotator/mine.html", {"batch": batch, "annotations": annotations, "final": final}
    )


def _edit_closed(request, batch):
    context = {"batch": batch, "visit_over": hooks.visit_over(user=request.user, batch_id=batch.pk)}
    return render(request, "annotator/edit_closed.html", context, status=403)


@require_http_methods(["GET", "POST"])
@annotator_required
def edit(request, pk):
    annotation = get_object_or_404(annotation_of(user=request.user, pk=pk))
    item = annotation.item
    if ratings_final(user=request.user, batch_id=item.batch_id):
        return _edit_closed(request, item.batch)
    if request.method == "GET":
        form = _form(
            item, initial=initial_from_annotation(annotation, item.constraints), annotation=annotation
        )
        return _render_rate(
            request, batch=item.batch, item=item, form=form, mode="edit", annotation=annotation
        )
    form = _form(item, data=request.POST, annotation=annotation)
    if not form.is_valid():
        return _refuse_answer(request, item, form, _form_errors(form), mode="edit", annotation=annotation)
    try:
        annotation_update(annotation=annotation, changed_by=request.user, **form.payload)
    except SubmissionRefused:  # stopped between the check above and the write
        return _edit_closed(request, item.batch)
    messages.success(request, "Saved your changes.")
    return redirect("annotate_mine", batch_id=item.batch_id)


def _own_answer(request, answer_pk):
    answer = _found(gold_answer_of(user=request.user, pk=answer_pk))
    _found(batch_open_to(user=request.user, batch_id=answer.gold_item.batch_id))
    return answer


@require_POST
@annotator_required
def gold_submit(request, answer_pk):
    answer = _own_answer(request, answer_pk)
    gold = answer.gold_item
    form = _form(gold, data=request.POST)
    if not form.is_valid():
        return _refuse_answer(
            request, gold, form, _form_errors(form), answer=answer, **_gold_session(request, gold.batch)
        )
    step = gold_answer_submit(answer=answer, annotator=request.user, **form.payload)
    if gold.kind == GoldItem.Kind.TRAINING:
        context = {"batch": gold.batch, "feedback": training_feedback(step=step)}
        template = (
            "annotator/training_feedback.html#feedback"
            if request.htmx
            else "annotator/training_feedback.html"
        )
        return render(request, template, context)
    messages.success(request, "Saved your rating.")
    if step.standing == WARN:
        messages.warning(request, CHECK_WARNING)
    return _next_after_gold(request, gold.batch)


@require_POST
@annotator_required
def gold_skip(request, answer_pk):
    answer = _own_answer(request, answer_pk)
    gold = answer.gold_item
    try:
        gold_answer_skip(answer=answer, annotator=request.user, reason=request.POST.get("skip_reason", ""))
    except ValidationError as exc:
        form = _form(gold, data=request.POST)
        return _refuse_answer(
            request,
            gold,
            form,
            exc.messages,
            answer=answer,
            skip_open=True,
            **_gold_session(request, gold.batch),
        )
    messages.info(request, "Skipped.")
    return _next_after_gold(request, gold.batch)
