"""A judge run started from the Judges page, carried out in the worker (queued and cancelled by
``annotator.services.jobs``).

The job keeps the run's settings (never the API key: only the name of the environment variable the
worker reads it from, one of ``settings.ANNOTATOR_JUDGE_KEY_ENVS``) and, as the run goes, its counters.
Cancelling sets a flag the worker reads between calls: no new calls, the ones in flight are saved.
"""

from __future__ import annotations

import os
import time

from django.conf import settings
from django.utils import timezone

from annotator.imports.errors import ImportRefused
from annotator.judges.engine.client import ChatClient, JudgeRunFatal
from annotator.judges.engine.progress import Prices, RunProgress
from annotator.judges.engine.runner import judge_run
from annotator.judges.engine.templates import TemplateError, load_template
from annotator.models import Batch, Job

POLL_SECONDS = 1.0  # how often the worker reads the cancel flag and writes progress


def judge_job_run(job: Job, update) -> None:
    """Carry out a queued judge run (in the worker); ``update(job, **fields)`` writes the job row."""
    p = job.params
    batch = Batch.objects.get(pk=p["batch_id"])
    try:
        template = load_template(p["template"])
    except TemplateError as exc:
        update(job, state=Job.FAILED, finished_at=timezone.now(), step="", message=str(exc))
        return
    if p["key_env"] not in settings.ANNOTATOR_JUDGE_KEY_ENVS:
        update(job, state=Job.FAILED, finished_at=timezone.now(), step="",
               message=f"{p['key_env']} is no longer one of the API key variables this server allows.")
        return
    client = ChatClient(base_url=p["base_url"], model=p["model"], api_key=os.environ.get(p["key_env"], ""))
    last = [0.0]

    def should_stop() -> bool:
        if time.monotonic() - last[0] < POLL_SECONDS:
            return False
        last[0] = time.monotonic()
        return Job.objects.filter(pk=job.pk, cancel_requested=True).exists()

    def progress(state: RunProgress) -> None:
        if state.done == state.total or time.monotonic() - last[0] >= POLL_SECONDS:
            update(job, progress=state.as_dict(), step=state.summary())

    update(job, step="Rendering every prompt before the first call")
    try:
        result = judge_run(
            batch=batch, template=template, client=client, judge_name=f"{template.name}/{p['model']}",
            concurrency=p["concurrency"], retry_failed=p["retry_failed"], calibration_set=p.get("calibration_set", False),
            prices=Prices(p["price_in"], p["price_out"]), progress=progress, should_stop=should_stop,
        )
    except (TemplateError, ImportRefused, JudgeRunFatal) as exc:
        update(job, state=Job.FAILED, finished_at=timezone.now(), step="",
               message=f"{exc} Calls finished before it are saved.")
        return
    finally:
        client.close()
    state = result.progress
    summary = f"Judge \u201c{result.judge.name}\u201d: {state.summary()}; {state.skipped} item(s) already called were skipped."
    if result.note:
        summary = f"{result.note} {summary}"
    if result.stopped:
        update(job, state=Job.CANCELLED, finished_at=timezone.now(), step="", progress=state.as_dict(),
               message=f"Cancelled. {summary} Start the run again to call the items that are left.")
    else:
        update(job, state=Job.DONE, finished_at=timezone.now(), step="", progress=state.as_dict(), message=summary)
