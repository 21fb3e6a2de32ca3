"""Saving an upload the admin confirmed, in the request or in the background worker."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from annotator.counted import counted
from annotator.models import Batch, Job
from annotator.services.job_runner import job_fail
from annotator.services.tokens import token_hash
from annotator.uploads.files.batch_file import parse_batch_file
from annotator.uploads.files.errors import FileRefused, ImportRefused
from annotator.uploads.forms import BATCH
from annotator.uploads.memory import gc_paused
from annotator.uploads.selectors.preview import upload_saved_batch
from annotator.uploads.services.annotation_imports import annotations_import_file
from annotator.uploads.services.batches import batch_import, batch_items_add
from hcs.rubric import Rubric

ITEMS = "items"


@dataclass(frozen=True)
class SavedUpload:
    """What a saved upload tells the admin, and the batch it went into (the pages link to it)."""

    message: str
    batch_id: int


@gc_paused()  # reading a file makes many objects and no cycles
def pending_upload_save(
    *, pending: dict, data: bytes, user, then: Callable[[SavedUpload], None] | None = None
) -> SavedUpload:
    """Check the file again and save it in one transaction; returns the message for the admin.
    ``then(saved)`` runs inside that transaction, so what it writes commits with the upload or not at
    all (the worker records the job's end there).

    Raises ``FileRefused`` or ``ImportRefused`` (nothing saved) when it does not pass.
    """
    rubric = Rubric.from_dict(pending["rubric"]) if pending.get("rubric") else None
    parsed = None
    if pending["mode"] in (ITEMS, BATCH):  # read before the transaction opens: nothing waits on it
        gold_rubric = (rubric or Rubric.default()) if pending["mode"] == BATCH else None
        parsed = parse_batch_file(data, filename=pending["filename"], rubric=gold_rubric)
    with transaction.atomic():
        saved = _save(pending=pending, data=data, user=user, rubric=rubric, parsed=parsed)
        if then is not None:
            then(saved)
    return saved


def _save(*, pending: dict, data: bytes, user, rubric: Rubric | None, parsed) -> SavedUpload:
    if pending["mode"] == ITEMS:  # items added to an existing batch (the API)
        batch = Batch.objects.get(pk=pending["batch_id"])
        count = batch_items_add(batch=batch, parsed=parsed)
        return SavedUpload(f"Added {counted(count, 'item', 'items')} to \u201c{batch.name}\u201d.", batch.pk)
    if pending["mode"] == BATCH:
        batch = batch_import(
            name=pending["name"],
            k=pending["k"],
            rubric=rubric or Rubric.default(),
            parsed=parsed,
            created_by=user,
        )
        return SavedUpload(_batch_saved(batch, "created with"), batch.pk)
    common = {"data": data, "filename": pending["filename"], "k": pending["k"], "created_by": user}
    plan = annotations_import_file(batch_name=pending["name"], rubric=rubric, **common)
    message = (
        f"Imported {counted(len(plan.parsed.annotations), 'annotation', 'annotations')} into "
        f"\u201c{plan.batch_name}\u201d ({counted(len(plan.new_items), 'new item', 'new items')}, "
        f"{counted(len(plan.new_users), 'new annotator account', 'new annotator accounts')})."
    )
    return SavedUpload(message, Batch.objects.values_list("pk", flat=True).get(name=plan.batch_name))


def _batch_saved(batch: Batch, verb: str) -> str:
    items = counted(batch.items.count(), "item", "items")
    return f"Batch \u201c{batch.name}\u201d {verb} {items}{_gold_saved(batch)}."


def upload_job_done(saved: SavedUpload, job: Job) -> dict[str, Any]:
    """The fields that end an upload job as done: its message, the batch it went into (the job page
    links to its report, assignment and study links), and the file dropped."""
    return {
        "state": Job.DONE,
        "finished_at": timezone.now(),
        "step": "",
        "message": saved.message,
        "params": {**job.params, "batch_id": saved.batch_id},
        "payload": None,
    }


def upload_saved_earlier(job: Job, *, since: datetime | None, how: str) -> dict[str, Any] | None:
    """The fields that end ``job`` as done when the database already holds its upload (a batch of its
    name that its owner created since ``since``), though the job did not record it: a worker of an
    earlier release killed between the commit and the job's end, or a second attempt of a job whose
    first one had saved it. ``how`` opens the message. None when the database holds no such batch."""
    batch = upload_saved_batch(job=job, since=since)
    if batch is None:
        return None
    return upload_job_done(SavedUpload(f"{how} {_batch_saved(batch, 'holds')}", batch.pk), job)


def _gold_saved(batch) -> str:
    """The gold rows saved beside the items, which the confirm button counted as rows too."""
    kinds = dict(batch.gold_items.order_by().values_list("kind").annotate(n=Count("pk")))
    if not kinds:
        return ""
    parts = ", ".join(f"{kinds[k]} {k}" for k in sorted(kinds, key=lambda k: k != "training"))
    return f" and {counted(sum(kinds.values()), 'gold item', 'gold items')} ({parts})"


def upload_saved_when_gone(job: Job) -> dict[str, Any] | None:
    """``JOB_KINDS["upload"].saved``: a job whose worker is gone, whose batch was committed while it ran
    (a worker of an earlier release, which recorded the end after the commit, killed in between)."""
    return upload_saved_earlier(
        job, since=job.started_at, how="The background worker stopped after this upload was saved:"
    )


def confirm_key(token: str) -> str:
    """What a confirm leaves in its job row to be recognised by (a hash: the token itself is the session's)."""
    return token_hash("upload-confirm:" + token)


@transaction.atomic
def upload_confirm_save(*, token: str, pending: dict, data: bytes, user) -> Job:
    """:func:`pending_upload_save`, leaving a done upload job in the same transaction: a confirm whose
    reply was lost (the process killed after the commit) is recognised when it is sent again. Returns
    that job (its message, and the batch the page links to)."""
    saved = pending_upload_save(pending=pending, data=data, user=user)
    now = timezone.now()
    return Job.objects.create(
        kind=Job.UPLOAD,
        created_by=user,
        state=Job.DONE,
        started_at=now,
        finished_at=now,
        params={**pending, "confirm_key": confirm_key(token), "batch_id": saved.batch_id},
        message=saved.message,
        label=f"Upload of {pending['filename']} (\u201c{pending['name']}\u201d)",
        step="Saved.",
    )


MAX_ERRORS_KEPT = 200  # a refused upload job keeps its first problems


def upload_job_run(job: Job, update) -> None:
    """Save a confirmed upload in one transaction (``JOB_KINDS["upload"]``), the job's end with it."""
    data = bytes(job.payload or b"")
    if job.attempts > 1:  # tried again: an earlier attempt may have saved it after all
        done = upload_saved_earlier(
            job, since=job.created_at, how="This upload was already saved by an earlier attempt:"
        )
        if done is not None:
            update(job, **done)
            return
    update(job, step=f"Checking and saving {len(data):,} bytes in one transaction")
    try:
        # The job's end is written in the transaction that saves the upload: a worker killed at any
        # moment leaves a job that says what the database holds (done with it, or nothing saved).
        pending_upload_save(
            pending=job.params,
            data=data,
            user=job.created_by,
            then=lambda saved: update(job, **upload_job_done(saved, job)),
        )
    except FileRefused as exc:
        _refused(job, str(exc), [])
        return
    except ImportRefused as exc:
        ordered = sorted(exc.errors, key=lambda e: e.sort_key)
        errors = [{"row": e.row, "column": e.column, "message": e.message} for e in ordered]
        _refused(job, f"{len(errors)} problem{'s' if len(errors) != 1 else ''}: nothing was saved.", errors)
        return


def _refused(job: Job, message: str, errors: list[dict]) -> None:
    job_fail(job, finished_at=timezone.now(), step="", message=message, errors=errors[:MAX_ERRORS_KEPT])
