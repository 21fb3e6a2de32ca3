"""Queueing the worker's refresh of a stream's series (``annotator.streams.tasks``), one at a time."""

from __future__ import annotations

import datetime as dt
import logging

from django.conf import settings
from django.utils import timezone

from annotator.models import Stream
from annotator.streams.tasks import stream_series_refresh

log = logging.getLogger(__name__)


def series_refresh_queue(*, stream_id: int) -> bool:
    """Ask the worker to compute the stream's changed windows ``STREAM_SERIES_REFRESH_DELAY_S`` from now,
    unless a refresh is already queued (it will see these changes too). Returns whether one was queued."""
    if not Stream.objects.filter(pk=stream_id, series_refresh_queued=False).update(
        series_refresh_queued=True
    ):
        return False
    task, delay = stream_series_refresh, settings.STREAM_SERIES_REFRESH_DELAY_S
    if delay and task.get_backend().supports_defer:
        task = task.using(run_after=timezone.now() + dt.timedelta(seconds=delay))
    try:
        task.enqueue(stream_id=stream_id)
    except Exception:
        # Not queued: let the next ingest try again (reads compute what is stale meanwhile).
        Stream.objects.filter(pk=stream_id).update(series_refresh_queued=False)
        log.exception("stream %s: the series refresh was not queued", stream_id)
        return False
    return True
