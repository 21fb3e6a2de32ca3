"""Marking the trace time whose data changed, so the series refresh recomputes those windows only."""

from __future__ import annotations

import datetime as dt

from annotator.models import Stream, StreamChange
from annotator.streams.windows import TICK, calendar_span


def changes_record(stream: Stream, times: list[dt.datetime]) -> None:
    """Mark the trace time that changed: each calendar window touched, or for a count-window stream the
    span from the earliest to the latest time (later count windows move with it, and get new bounds)."""
    if not times:
        return
    if stream.window_count is None:
        spans = sorted({calendar_span(t, stream.window) for t in times})
    else:
        spans = [(min(times), max(times) + TICK)]
    StreamChange.objects.bulk_create([StreamChange(stream=stream, start=a, end=b) for a, b in spans])
