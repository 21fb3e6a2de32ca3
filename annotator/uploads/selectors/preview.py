"""The preview of an upload waiting for confirmation (shared by the upload page and its background job),
and the batch a saved upload left."""

from __future__ import annotations

from datetime import datetime

from annotator.models import Batch
from annotator.uploads.forms import BATCH
from annotator.uploads.memory import gc_paused
from annotator.uploads.selectors.plans import (
    UploadPreview,
    annotation_upload_preview,
    batch_upload_preview,
)
from hcs.rubric import Rubric


@gc_paused()  # reading a file makes many objects and no cycles
def pending_upload_preview(*, pending: dict, data: bytes) -> UploadPreview:
    """Parse and check a pending upload again; raises ``FileRefused`` when the file cannot be read."""
    build = batch_upload_preview if pending["mode"] == BATCH else annotation_upload_preview
    rubric = Rubric.from_dict(pending["rubric"]) if pending.get("rubric") else None
    return build(data=data, filename=pending["filename"], name=pending["name"], k=pending["k"], rubric=rubric)


def upload_saved_batch(*, job, since: datetime | None) -> Batch | None:
    """The batch an upload job of a new batch saved, when the database holds it although the job did not
    record it: a batch of the job's name that the job's owner created at or after ``since``. Only a new
    batch can be told apart this way (items or annotations added to a batch leave no such trace)."""
    params = job.params or {}
    if params.get("mode") != BATCH or not params.get("name") or since is None:
        return None
    return (
        Batch.objects.filter(name=params["name"].strip(), created_by=job.created_by_id, created_at__gte=since)
        .order_by("created_at")
        .first()
    )
