"""An annotator's way into and out of a study batch: consent, instructions, the end page.

The rating views call ``study_detour`` before handing out or taking an item, and
``study_nothing_left`` when no item is left; both return a response to send instead, or None.
"""

from __future__ import annotations

import json
from functools import lru_cache

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods
from django_htmx.http import HttpResponseClientRedirect

from annotator.models import Batch, Enrolment
from annotator.rating.selectors.queue import batch_open_to
from annotator.roles import annotator_required
from annotator.studies.markdown_text import markdown_html
from annotator.studies.selectors import (
    batch_gives_checks,
    checks_answered_count,
    earns_completion_code,
    ending_for,
    limits_for,
    submitted_count,
)
from annotator.studies.services.enrolment import (
    UNREAD,
    Stage,
    enrolment_consent,
    enrolment_finish,
    enrolment_instructions_seen,
    study_gate,
)
from hcs.rubric import Rubric
from hcs.rubric_markdown import render_instructions

End = Enrolment.End
TIME_UP_NOT_SAVED = (
    "Your session's time ran out before this rating arrived, so it was not saved: ratings sent after the "
    "time limit are not accepted. Everything you sent before the limit is kept."
)
ENDED_NOT_SAVED = "Your part in this study had already ended, so this rating was not saved. Everything you sent before is kept."
STAGE_URLS = {
    Stage.CONSENT: "study_consent",
    Stage.INSTRUCTIONS: "study_instructions",
    Stage.ENDED: "study_done",
}


def instructions_html(batch: Batch):
    """The batch's instructions as safe HTML; the rubric's guidance and examples by default."""
    return (
        markdown_html(batch.instructions)
        if batch.instructions
        else _rubric_instructions_html(batch.rubric_text)
    )


@lru_cache(maxsize=64)
def _rubric_instructions_html(rubric_text: str):
    """The rubric's own guidance and examples as HTML: the same for every page of a batch."""
    return markdown_html(render_instructions(Rubric.from_dict(json.loads(rubric_text))))


def _go(request, url_name: str, batch: Batch) -> HttpResponse:
    url = reverse(url_name, args=[batch.pk])
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


def study_detour(
    request, batch: Batch, enrolment=UNREAD, submitted: int | None = None, *, sending: bool = False
) -> HttpResponse | None:
    """Where the annotator must go before rating in this batch (None: rate); ``enrolment``: theirs
    in the batch, and ``submitted``: their count of annotations in it, when already read
    (``annotator.rating.selectors.facts``). ``sending``: the request carries a rating, which an
    ended visit does not take; the next page then says it was not saved."""
    gate = study_gate(user=request.user, batch=batch, enrolment=enrolment, submitted=submitted)
    if gate.stage == Stage.RATE:
        return None
    if sending and gate.stage == Stage.ENDED:
        messages.warning(
            request, TIME_UP_NOT_SAVED if gate.enrolment.end == End.TIMED_OUT else ENDED_NOT_SAVED
        )
    return _go(request, STAGE_URLS[gate.stage], batch)


def study_nothing_left(request, batch: Batch) -> HttpResponse | None:
    """A crowd worker with nothing left is done: the end page with their code, or the study-full page
    when they rated nothing (None: not crowd)."""
    enrolment = Enrolment.objects.filter(user=request.user, batch=batch).exclude(worker_id="").first()
    if enrolment is None:
        return None
    enrolment_finish(enrolment=enrolment)
    return _go(request, "study_done", batch)


def _batch(request, batch_id) -> Batch:
    batch = batch_open_to(user=request.user, batch_id=batch_id)
    if batch is None:
        raise Http404("Not found, or not open to you.")
    return batch


@require_http_methods(["GET", "POST"])
@annotator_required
def consent(request, batch_id):
    batch = _batch(request, batch_id)
    gate = study_gate(user=request.user, batch=batch)
    if gate.stage != Stage.CONSENT:
        return redirect("annotate_next", batch_id=batch.pk)
    if request.method == "POST":
        decision = request.POST.get("decision")
        if decision not in ("accept", "decline"):
            context = {"batch": batch, "consent_html": markdown_html(batch.consent_text), "error": True}
            return render(request, "annotator/study_consent.html", context, status=422)
        enrolment_consent(user=request.user, batch=batch, accept=decision == "accept")
        return redirect("annotate_next", batch_id=batch.pk)
    return render(
        request,
        "annotator/study_consent.html",
        {"batch": batch, "consent_html": markdown_html(batch.consent_text)},
    )


@require_http_methods(["GET", "POST"])
@annotator_required
def instructions(request, batch_id):
    batch = _batch(request, batch_id)
    if request.method == "POST":
        gate = study_gate(user=request.user, batch=batch)
        if gate.stage == Stage.INSTRUCTIONS:
            enrolment_instructions_seen(user=request.user, batch=batch)
        return redirect("annotate_next", batch_id=batch.pk)
    gate = study_gate(user=request.user, batch=batch)
    context = {
        "batch": batch,
        "instructions_html": instructions_html(batch),
        "first_time": gate.stage == Stage.INSTRUCTIONS,
        "limits": limits_for(batch=batch, enrolment=gate.enrolment),
        "crowd": gate.enrolment is not None and gate.enrolment.is_crowd,
        # The quota counts items, and checks come between them: "up to 4" must not read as the most.
        "checks": batch_gives_checks(batch),
    }
    return render(request, "annotator/study_instructions.html", context)


@require_GET
@annotator_required
def done(request, batch_id):
    enrolment = (
        Enrolment.objects.select_related("batch", "study_link")
        .filter(user=request.user, batch_id=batch_id)
        .first()
    )
    if enrolment is None or not enrolment.end:
        _batch(request, batch_id)  # a 404 for batches not open to them
        return redirect("annotate_next", batch_id=batch_id)
    # The count the quota and the Prolific review pay for; checks are told apart, as the
    # instructions said they would come on top.
    annotations = submitted_count(user=request.user, batch=enrolment.batch)
    context = {
        "batch": enrolment.batch,
        "enrolment": enrolment,
        "ending": ending_for(enrolment, annotations=annotations),
        "items_done": annotations,
        "checks_done": checks_answered_count(user=request.user, batch=enrolment.batch),
        # Training and checks are not rated items: time that ran out before the first rating earns nothing.
        "time_up_unrated": enrolment.end == End.TIMED_OUT
        and not earns_completion_code(end=enrolment.end, annotations=annotations),
    }
    if enrolment.end == End.TIMED_OUT:
        # The time-up notice stands alone: a "Saved your rating." from the last item is stale by now
        # ("they are kept" says it); a rating refused for lateness is still told.
        context["messages"] = [m for m in messages.get_messages(request) if m.level != messages.SUCCESS]
    return render(request, "annotator/study_done.html", context)
