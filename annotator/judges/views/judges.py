"""Researchers and admins import LLM-judge scores and pairwise verdicts. Annotators never see judges."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotator.counted import counted
from annotator.judges.engine.options import RunOptions
from annotator.judges.forms.judges import JudgeRunForm, JudgeScoresForm, VerdictsForm
from annotator.judges.selectors.listing import (
    judge_batches,
    judge_failure_batches,
    judge_runs_recent,
    judges_overview,
)
from annotator.judges.services.judges import judge_scores_import, pairwise_verdicts_import
from annotator.roles import researcher_required
from annotator.uploads.files.errors import FileRefused, ImportRefused


def _page(request, scores_form=None, verdicts_form=None, errors=(), status=200, run_form=None, estimate=None):
    context = {
        "estimate": estimate,
        "run_form": run_form or JudgeRunForm(auto_id="run_%s"),
        "scores_form": scores_form or JudgeScoresForm(auto_id="scores_%s"),
        "verdicts_form": verdicts_form or VerdictsForm(auto_id="verdicts_%s"),
        "errors": list(errors),
        "judges": judges_overview(),
        "judge_batches": judge_batches(),
        "failure_batches": judge_failure_batches(),
        "runs": judge_runs_recent(user=request.user),
    }
    return render(request, "annotator/judges.html", context, status=status)


@require_GET
@researcher_required
def judges(request):
    return _page(request)


@require_POST
@researcher_required
def import_scores(request):
    form = JudgeScoresForm(request.POST, request.FILES, auto_id="scores_%s")
    if not form.is_valid():
        return _page(request, scores_form=form, status=400)
    data = form.cleaned_data
    try:
        count = judge_scores_import(
            batch=data["batch"],
            judge_name=data["judge"],
            data=data["file"].read(),
            filename=data["file"].name,
            scale=form.judge_scale(),
            model=data["model"],
            template=data["template"],
            output=form.output_spec(),
        )
    except (FileRefused, ImportRefused) as exc:
        errors = exc.errors if isinstance(exc, ImportRefused) else [str(exc)]
        return _page(request, scores_form=form, errors=errors, status=400)
    messages.success(
        request,
        f"Imported {counted(count, 'score', 'scores')} of judge \u201c{data['judge']}\u201d into \u201c{data['batch']}\u201d.",
    )
    return redirect("judges")


@require_POST
@researcher_required
def import_verdicts(request):
    form = VerdictsForm(request.POST, request.FILES, auto_id="verdicts_%s")
    if not form.is_valid():
        return _page(request, verdicts_form=form, status=400)
    data = form.cleaned_data
    try:
        count = pairwise_verdicts_import(
            batch=data["batch"],
            judge_name=data["judge"],
            data=data["file"].read(),
            filename=data["file"].name,
            baseline_system=data["baseline_system"] or None,
            model=data["model"],
            template=data["template"],
        )
    except (FileRefused, ImportRefused) as exc:
        errors = exc.errors if isinstance(exc, ImportRefused) else [str(exc)]
        return _page(request, verdicts_form=form, errors=errors, status=400)
    messages.success(
        request,
        f"Imported {counted(count, 'verdict', 'verdicts')} of judge \u201c{data['judge']}\u201d into \u201c{data['batch']}\u201d.",
    )
    return redirect("judges")


@require_POST
@researcher_required
def start_run(request):
    form = JudgeRunForm(request.POST, auto_id="run_%s")
    if not form.is_valid():
        return _page(request, run_form=form, status=400)
    data = form.cleaned_data
    if "dry_run" in request.POST:
        # Imported here: the judge engine loads httpx, which the web workers that never run judges do without.
        from annotator.judges.engine.templates import TemplateError
        from annotator.judges.providers import UnknownProvider
        from annotator.judges.services.jobs import judge_form_estimate

        try:
            lines = judge_form_estimate(data)
        except (TemplateError, UnknownProvider) as exc:
            form.add_error(None, str(exc))
            return _page(request, run_form=form, status=400)
        return _page(request, run_form=form, estimate=lines)
    from annotator.judges.services.jobs import judge_job_create

    options = RunOptions.from_form(data)
    job = judge_job_create(batch=data["batch"], template=data["template"], user=request.user, options=options)
    return redirect("job_status", job_id=job.pk)
