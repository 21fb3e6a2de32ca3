"""The streams' side of the rating hooks (``annotator.rating.hooks.RATING_HOOKS``): labels given to a
stream's sampled traces in the browser, or imported, mark their windows changed and queue the worker's
refresh of the series, as traces and labels sent through the API do. The rest of the rating flow is the
study's: here every other hook says "nothing to add"."""

from __future__ import annotations

from django.db import transaction

from annotator.models import Stream, Trace
from annotator.rating.hooks import Session
from annotator.streams.services.ingest import changes_record
from annotator.streams.services.refresh import series_refresh_queue
from annotator.streams.services.streams import BATCH_PREFIX


class StreamLabels:
    def before_rating(self, *, user, facts, sending: bool = False):
        return None

    def nothing_left(self, *, user, batch):
        return None

    def session(self, *, facts) -> Session:
        return Session()

    def visit_over(self, *, user, batch_id: int) -> bool:
        return False

    def workers(self, *, batch) -> list:
        return []

    def annotator_stopped(self, *, user, batch, reason: str, now) -> None:
        return None

    def labels_changed(self, *, batch, item_ids: list[int]) -> None:
        """Mark the windows of the rated traces changed (so a read computes them, or the worker) and queue
        the refresh once the writer commits. Every stream's batch is named ``stream: <name>``, so any other
        batch returns here without a query; a batch someone named so by hand costs one."""
        if not batch.name.startswith(BATCH_PREFIX) or not item_ids:
            return
        stream = Stream.objects.filter(batch_id=batch.pk).first()
        if stream is None:
            return
        times = list(
            Trace.objects.filter(stream=stream, item_id__in=item_ids).values_list("timestamp", flat=True)
        )
        if not times:
            return
        changes_record(stream, times)
        transaction.on_commit(lambda: series_refresh_queue(stream_id=stream.pk), robust=True)
