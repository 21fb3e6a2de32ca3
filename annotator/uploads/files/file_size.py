"""The upload size limit, and the refusal of a file over it (no parser needed to ask)."""

from __future__ import annotations

from django.conf import settings

from annotator.uploads.files.errors import FileRefused


def human_size(n_bytes: int) -> str:
    if n_bytes >= 1024 * 1024:
        return f"{n_bytes / (1024 * 1024):.1f} MB"
    if n_bytes >= 1024:
        return f"{n_bytes / 1024:.1f} kB"
    return f"{n_bytes} bytes"


def upload_limit() -> int:
    """The largest file accepted, in bytes: the one reading of ``ANNOTATOR_UPLOAD_MAX_MB`` for every door
    (upload pages, judge files, import commands, background jobs)."""
    return settings.ANNOTATOR_UPLOAD_MAX_BYTES


def check_size(n_bytes: int) -> None:
    """Refuse a file larger than :func:`upload_limit`."""
    limit = upload_limit()
    if n_bytes > limit:
        raise FileRefused(
            f"The file is {human_size(n_bytes)}; the largest file accepted is {human_size(limit)}. "
            "Split it into smaller files."
        )
