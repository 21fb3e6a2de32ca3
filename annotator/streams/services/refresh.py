"""Queueing the worker's refresh of a stream's series (``annotator.streams.tasks``), one at a time."""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.utils import timezone

from annotator.streams.tasks import queue_once, stream_series_refresh


def series_refresh_queue(*, stream_id: int) -> bool:
    """Ask the worker to compute the stream's changed windows ``STREAM_SERIES_REFRESH_DELAY_S`` from now,
    unless a refresh is already queued (it will see these changes too). Returns whether one was queued."""
    delay = settings.STREAM_SERIES_REFRESH_DELAY_S
    task = stream_series_refresh
    if delay and task.get_backend().supports_defer:
        task = task.using(run_after=timezone.now() + dt.timedelta(seconds=delay))
    # Not queued (the enqueue failed): the next ingest tries again, and reads compute what is stale meanwhile.
    return queue_once(task, stream_id=stream_id, flag="series_refresh_queued", what="the series refresh")
