"""A judge run started from the Judges page, carried out in the worker (queued and cancelled by
``annotator.services.jobs``; its kind is listed in ``annotator.job_kinds.JOB_KINDS``).

The job keeps the run's settings (never the API key: only the name of the environment variable the
worker reads it from, one of ``settings.ANNOTATOR_JUDGE_KEY_ENVS``) and, as the run goes, its counters.
Cancelling sets a flag the worker reads between calls: no new calls, the ones in flight are saved.
A run in which every call failed ends Failed, one in which some failed ends Done with the failures
listed (the first errors and a sample of what the endpoint answered).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from django.conf import settings
from django.utils import timezone

from annotator.counted import counted
from annotator.judges.engine.budget import estimate_lines
from annotator.judges.engine.client import ChatClient, JudgeRunFatal
from annotator.judges.engine.options import RunOptions
from annotator.judges.engine.planning import judge_run_estimate
from annotator.judges.engine.progress import RunProgress
from annotator.judges.engine.runner import RunResult, judge_run
from annotator.judges.engine.templates import JudgeTemplate, TemplateError, load_template
from annotator.judges.providers import DEFAULT_PROVIDER, JUDGE_PROVIDERS, UnknownProvider, client_for
from annotator.judges.services.runs import JudgeBusy, judge_claims_release_for_job
from annotator.models import Batch, Job
from annotator.services.jobs import job_enqueue
from annotator.uploads.files.errors import ImportRefused

POLL_SECONDS = 1.0  # how often the worker reads the cancel flag and writes progress
ERRORS_SHOWN = 5
SAMPLE_OUTPUT_CHARS = 2000


def judge_job_run(job: Job, update) -> None:
    """Carry out a queued judge run (in the worker); ``update(job, **fields)`` writes the job row."""
    options = RunOptions.from_job_payload(job.params)
    batch = Batch.objects.get(pk=job.params["batch_id"])
    ready = _prepare(job, update, options)
    if ready is None:
        return
    template, client = ready
    earlier = _earlier_attempts(job)
    should_stop, progress = _watch(job, update, earlier)
    update(job, step="Rendering every prompt before the first call")
    try:
        result = judge_run(
            batch, template, options, client=client, progress=progress, should_stop=should_stop, job_id=job.pk
        )
    except JudgeBusy as exc:  # refused before any call: its message names the holder and says when to retry
        _end(job, update, Job.FAILED, str(exc))
        return
    except (TemplateError, ImportRefused, JudgeRunFatal) as exc:
        _end(job, update, Job.FAILED, f"{_sentence(str(exc))} Calls finished before it are saved.")
        return
    finally:
        client.close()
    _finish(job, update, result, earlier)


def _end(job: Job, update, state: str, message: str, **fields) -> None:
    """Write the job's end: ``state`` (Failed, Cancelled or Done) and its ``message``."""
    update(job, state=state, finished_at=timezone.now(), step="", message=message, **fields)


def _prepare(job: Job, update, options: RunOptions) -> tuple[JudgeTemplate, ChatClient] | None:
    """(the template, a client with the key from the worker's environment), or None once the job is Failed
    for what stops it before any call: the template, the key variable, the key, the provider."""
    try:
        template = load_template(job.params["template"])
    except TemplateError as exc:
        _end(job, update, Job.FAILED, str(exc))
        return None
    if options.key_env not in settings.ANNOTATOR_JUDGE_KEY_ENVS:
        message = f"{options.key_env} is no longer one of the API key variables this server allows."
        _end(job, update, Job.FAILED, message)
        return None
    api_key = os.environ.get(options.key_env, "")
    provider = JUDGE_PROVIDERS.get(options.provider or DEFAULT_PROVIDER)
    if not api_key and not (provider is not None and provider.key_optional):
        message = f"The API key variable {options.key_env} is not set on the worker; nothing was called."
        _end(job, update, Job.FAILED, message)
        return None
    try:
        return template, client_for(options.client_params(), api_key=api_key)
    except UnknownProvider as exc:
        _end(job, update, Job.FAILED, f"{exc}; nothing was called.")
        return None


def _watch(job: Job, update, earlier: dict) -> tuple[Callable[[], bool], Callable[[RunProgress], None]]:
    """(whether the job was cancelled, the progress writer): each at most every POLL_SECONDS."""
    # The cancel poll and the progress write keep their own clocks: sharing one let the poll, which runs
    # every quarter second, starve the progress write, so the page showed no progress until the end.
    polled, written = [0.0], [0.0]

    def should_stop() -> bool:
        if time.monotonic() - polled[0] < POLL_SECONDS:
            return False
        polled[0] = time.monotonic()
        return Job.objects.filter(pk=job.pk, cancel_requested=True).exists()

    def progress(state: RunProgress) -> None:
        if state.done == state.total or time.monotonic() - written[0] >= POLL_SECONDS:
            written[0] = time.monotonic()
            # The step is a short column: the reasons go in the progress, which the page lists under Failed.
            update(job, progress=_with_totals(state, earlier), step=state.summary())

    return should_stop, progress


def _finish(job: Job, update, result: RunResult, earlier: dict) -> None:
    """Write how the run ended: capped or cancelled, every call failed, some failed, or done."""
    state = result.progress
    summary = _summary(result)
    progress_row = _with_totals(state, earlier)
    # The row-error shape every job shares (the API's JobOut), with the item named in the message.
    errors = [
        {"row": None, "column": None, "item": item, "message": f"item {item}: {error}"}
        for item, error in result.failures[:ERRORS_SHOWN]
    ]
    if result.failed_outputs:
        progress_row["sample_raw_output"] = result.failed_outputs[0][:SAMPLE_OUTPUT_CHARS]
    finished = {"progress": progress_row, "errors": errors}
    if result.capped:
        message = f"Stopped at the cost cap. {summary} Start a run with a higher cap to call the items that are left."
        _end(job, update, Job.CANCELLED, message, **finished)
    elif result.stopped:
        message = f"Cancelled. {summary} Start the run again to call the items that are left."
        _end(job, update, Job.CANCELLED, message, **finished)
    elif state.done and state.failed == state.done:
        # "failed" counts every call that gave no score: unreadable and ambiguous answers too.
        message = (
            f"No call gave a score ({state.failed} of {state.done} failed, unreadable or ambiguous); "
            f"nothing was scored. {summary} "
            "The first errors and a sample of what the endpoint answered are below."
        )
        _end(job, update, Job.FAILED, message, **finished)
    elif state.failed:
        message = (
            f"Partly failed: {state.failed} of {state.done} calls gave no score (failed, unreadable or "
            f"ambiguous). {summary} "
            "Start the run again with \u201cCall failed items again\u201d ticked to retry them."
        )
        _end(job, update, Job.DONE, message, **finished)
    else:
        _end(job, update, Job.DONE, summary, **finished)


def _summary(result: RunResult) -> str:
    """What the run did, in a sentence or three: its notes, its counts, the calls it left out."""
    state = result.progress
    summary = (
        f"Judge \u201c{result.judge.name}\u201d: {state.summary(reasons=True)}; "
        f"{counted(state.skipped, 'item', 'items')} already called {'was' if state.skipped == 1 else 'were'} skipped."
    )
    if result.unknown:
        summary += (
            f" {counted(len(result.unknown), 'call was', 'calls were')} sent by a run that was killed and the outcome is unknown: "
            "they were not called again (tick \u201cCall again the calls whose outcome is unknown\u201d, or "
            "run_judge --retry-unknown, to call them)."
        )
    return f"{result.note} {summary}" if result.note else summary


def _earlier_attempts(job: Job) -> dict:
    """What the earlier attempts of ``job`` (stopped and started again, or tried again) paid: the totals its
    progress last recorded. Empty for a first attempt."""
    last = job.progress if isinstance(job.progress, dict) else {}
    totals = last.get("all_attempts")
    if isinstance(totals, dict):
        return totals
    if "paid" in last:  # a progress written before totals were kept: that attempt alone
        return {k: last.get(k) for k in ("paid", "tokens_in", "tokens_out", "cost")}
    return {}


def _with_totals(state: RunProgress, earlier: dict) -> dict:
    """The progress of this attempt, with ``all_attempts``: what every attempt of the job paid so far, so the
    page's cost is the job's, not only its last attempt's."""
    row = state.as_dict()
    cost = state.cost if state.prices.known else None
    if earlier.get("cost") is not None:
        cost = (cost or 0.0) + earlier["cost"]
    row["all_attempts"] = {
        "paid": state.paid + (earlier.get("paid") or 0),
        "tokens_in": state.tokens_in + (earlier.get("tokens_in") or 0),
        "tokens_out": state.tokens_out + (earlier.get("tokens_out") or 0),
        "cost": cost,
        "attempts": (earlier.get("attempts") or (1 if earlier else 0)) + 1,
    }
    return row


def _sentence(text: str) -> str:
    """``text`` ending with a full stop, so the sentence appended after it reads as one."""
    text = text.rstrip()
    return text if text.endswith((".", "!", "?", ":")) else f"{text}."


def judge_job_release(job: Job) -> None:
    """``JOB_KINDS`` release of a judge run whose worker is gone: its claim on the judge, which the dead
    process can no longer renew or release, so Try again resumes at once."""
    judge_claims_release_for_job(job=job)


def judge_form_estimate(data: dict) -> list[str]:
    """The dry run of the Run a judge form's ``data`` (its cleaned data), in words: what the run would call,
    its estimated tokens and cost, and with a cost cap the most it can spend. Calls nothing, needs no key.
    Raises TemplateError or UnknownProvider."""
    options = RunOptions.from_form(data)
    client = client_for(options.client_params())
    try:
        guess = judge_run_estimate(data["batch"], load_template(data["template"]), client, options)
    finally:
        client.close()
    return estimate_lines(guess)


def judge_job_retry_params(job: Job) -> dict:
    """The params of a judge run tried again: when its calls failed, trying again means calling them again."""
    if job.state == Job.FAILED and job.errors:
        return {**job.params, "retry_failed": True}
    return job.params


def judge_job_create(*, batch: Batch, template: str, user, options: RunOptions) -> Job:
    """Queue a judge run of ``template`` on ``batch`` with ``options``. Raises ValueError for a key
    variable that is not allowed. The job stores the options under the keys its runs have always had."""
    if options.key_env not in settings.ANNOTATOR_JUDGE_KEY_ENVS:
        raise ValueError(f"{options.key_env} is not one of the API key variables this server allows")
    job = Job.objects.create(
        kind=Job.JUDGE_RUN,
        created_by=user,
        params={"batch_id": batch.pk, "template": template, **options.to_job_payload()},
        label=judge_run_label(
            judge=options.judge,
            template=template,
            model=options.model,
            batch_name=batch.name,
            calibration_set=options.calibration_set,
        ),
    )
    job_enqueue(job)
    return job


LABEL_MAX = Job._meta.get_field("label").max_length


def judge_run_label(
    *, judge: str, template: str, model: str, batch_name: str, calibration_set: bool = False
) -> str:
    """A judge run's label: the judge's name first, so two judges' runs of one template and model on one
    batch can be told apart (the run names a judge left blank as it does: TEMPLATE/MODEL)."""
    name = judge or f"{template}/{model}"
    label = f"Judge \u201c{name}\u201d: {template} with {model} on \u201c{batch_name}\u201d" + (
        " (calibration set)" if calibration_set else ""
    )
    return label if len(label) <= LABEL_MAX else label[: LABEL_MAX - 1] + "\u2026"
