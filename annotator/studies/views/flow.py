"""An annotator's way into and out of a study batch: the consent, instructions and end pages.

The rating views reach the study's gate through the rating hooks (``annotator.rating.hooks``,
implemented by ``annotator.studies.services.enrolment.StudyFlow``), which send the annotator here.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from annotator.markdown_text import markdown_html
from annotator.models import Batch, Enrolment
from annotator.rating.instructions import instructions_html
from annotator.rating.selectors.queue import batch_open_to
from annotator.roles import annotator_required
from annotator.studies.selectors import (
    batch_gives_checks,
    checks_answered_count,
    earns_completion_code,
    ending_for,
    limits_for,
    submitted_count,
)
from annotator.studies.services.enrolment import (
    Stage,
    enrolment_consent,
    enrolment_instructions_seen,
    study_gate,
)

End = Enrolment.End


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
