"""The preview of an upload waiting for confirmation (shared by the upload page and its background job)."""

from __future__ import annotations

from annotator.forms.uploads import BATCH
from annotator.memory import gc_paused
from annotator.selectors.imports import (
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
