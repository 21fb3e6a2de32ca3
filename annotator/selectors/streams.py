"""Which stream a batch belongs to, for the pages of a batch (its report, its judge cards) to link to."""

from __future__ import annotations

from annotator.models import Stream


def stream_of_batch(*, batch_id: int) -> str | None:
    """The name of the stream whose human-reviewed sample the batch holds, or None."""
    return Stream.objects.filter(batch_id=batch_id).values_list("name", flat=True).first()
