"""A stream's calibration series for one judge × dimension, kept per window.

Each window's numbers are stored (``StreamWindowStat``) and computed again only when its data changed:
a later ``StreamChange`` overlapping it (traces or judge scores arrived), or a different fingerprint
of its human labels (annotations submitted, edited or imported, or an annotator excluded). Reading a
series whose data did not change reads stored rows and a few aggregates only.
"""

from __future__ import annotations

import bisect
import datetime as dt
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import Count, Max, Min, Sum

from annotator.models import (
    Annotation,
    AnnotatorStanding,
    Score,
    Stream,
    StreamAlert,
    StreamChange,
    StreamWindowStat,
    Trace,
    TraceScore,
)
from annotator.streams.selectors import COMPUTED, alerts_of
from annotator.streams.series import window_statistics
from annotator.streams.services.alerts import alerts_refresh
from annotator.streams.windows import count_windows


@dataclass
class Series:
    stream: Stream
    judge: str
    dimension: str
    windows: list[dict[str, Any]] = field(default_factory=list)
    alerts: list[StreamAlert] = field(default_factory=list)  # stored: the worker's refresh computes them
    alerts_status: str = ""
    recomputed: int = 0  # windows computed on this read (the rest were stored)


def _window_bounds(stream: Stream) -> list[tuple[dt.datetime, dt.datetime]]:
    if stream.window_count is None:
        # Every ingest marks the calendar windows it touched: their set is the windows with traces.
        return sorted(set(StreamChange.objects.filter(stream=stream).values_list("start", "end")))
    span = Trace.objects.filter(stream=stream).aggregate(first=Min("timestamp"), last=Max("timestamp"))
    if span["first"] is None:
        return []
    sampled = list(
        Trace.objects.filter(stream=stream, sampled=True)
        .order_by("timestamp")
        .values_list("timestamp", flat=True)
    )
    return count_windows(sampled, stream.window_count, span["first"], span["last"])


def _excluded(stream: Stream) -> list[int]:
    return sorted(
        AnnotatorStanding.objects.filter(batch_id=stream.batch_id, excluded=True).values_list(
            "annotator_id", flat=True
        )
    )


def _stream_human_key(stream: Stream, excluded: list[int]) -> str:
    """Changes whenever any annotation of the stream's batch is added, edited or removed, or the set of
    excluded annotators changes: one aggregate query."""
    agg = Annotation.objects.filter(item__batch_id=stream.batch_id).aggregate(
        n=Count("id"), ids=Sum("id"), last=Max("updated_at")
    )
    last = agg["last"].isoformat() if agg["last"] else "-"
    return f"{agg['n']}:{agg['ids'] or 0}:{last}:{','.join(map(str, excluded))}"[:120]


def _human_labels(stream: Stream, dimension: str, excluded: list[int]):
    """The stream's human scores on ``dimension``: per trace pk, {annotator: score}, with each trace's
    timestamp, and per trace the (annotation id, updated_at) pairs the window fingerprints read."""
    traces = {
        item: (pk, when)
        for pk, item, when in Trace.objects.filter(stream=stream, sampled=True).values_list(
            "pk", "item_id", "timestamp"
        )
    }
    rows = (
        Score.objects.filter(item__batch_id=stream.batch_id, dimension=dimension)
        .exclude(annotation__annotator_id__in=excluded)
        .values_list(
            "item_id", "annotation__annotator_id", "value", "annotation_id", "annotation__updated_at"
        )
    )
    labels: dict[int, dict[int, int]] = defaultdict(dict)
    marks: dict[int, list] = defaultdict(list)
    times: dict[int, dt.datetime] = {}
    for item, annotator, value, annotation, updated in rows:
        if item not in traces:
            continue
        pk, when = traces[item]
        labels[pk][annotator] = value
        marks[pk].append((annotation, updated))
        times[pk] = when
    return labels, marks, times


def _window_key(bounds, marks, times) -> dict[tuple, str]:
    """Each window's fingerprint of its human labels: how many, the sum of their ids, the latest edit."""
    starts = [a for a, _ in bounds]
    parts: dict[int, list] = defaultdict(list)
    for pk, when in times.items():
        i = bisect.bisect_right(starts, when) - 1
        if i >= 0 and when < bounds[i][1]:
            parts[i].extend(marks[pk])
    keys = {}
    for i, span in enumerate(bounds):
        found = parts.get(i, [])
        last = max((u for _, u in found), default=None)
        keys[span] = f"{len(found)}:{sum(a for a, _ in found)}:{last.isoformat() if last else '-'}"
    return keys


def _overlaps(changes, seen: int, start, end) -> bool:
    return any(cid > seen and a < end and b > start for cid, a, b in changes)


def series_refresh(*, stream: Stream, judge: str, dimension: str) -> Series:
    """The series, its stale windows computed again and stored, with its stored alerts."""
    bounds = _window_bounds(stream)
    stored = {
        (s.start, s.end): s
        for s in StreamWindowStat.objects.filter(stream=stream, judge=judge, dimension=dimension)
    }
    last_change = StreamChange.objects.filter(stream=stream).aggregate(m=Max("id"))["m"] or 0
    oldest_seen = min((s.change_seen for s in stored.values()), default=0)
    changes = list(
        StreamChange.objects.filter(stream=stream, id__gt=oldest_seen).values_list("id", "start", "end")
    )
    excluded = _excluded(stream)
    stream_key = _stream_human_key(stream, excluded)
    stale = []
    for span in bounds:
        s = stored.get(span)
        if (
            s is None
            or _overlaps(changes, s.change_seen, *span)
            or not s.human_key.startswith(stream_key + "|")
        ):
            stale.append(span)
    window_keys: dict[tuple, str] = {}
    if stale:
        labels, marks, times = _human_labels(stream, dimension, excluded)
        window_keys = _window_key(bounds, marks, times)
        # A window whose only difference is the stream-wide key (labels elsewhere changed) keeps its numbers.
        still, rekey = [], []
        for span in stale:
            s = stored.get(span)
            if (
                s is not None
                and not _overlaps(changes, s.change_seen, *span)
                and s.human_key.split("|", 1)[1] == window_keys[span]
            ):
                rekey.append(s)
            else:
                still.append(span)
        for s in rekey:
            s.human_key = f"{stream_key}|{window_keys[(s.start, s.end)]}"
        StreamWindowStat.objects.bulk_update(rekey, ["human_key"])
        fresh = [
            _computed(
                stream,
                judge,
                dimension,
                span,
                labels,
                times,
                last_change,
                f"{stream_key}|{window_keys[span]}",
            )
            for span in still
        ]
        with transaction.atomic():
            StreamWindowStat.objects.bulk_create(
                fresh,
                update_conflicts=True,
                unique_fields=["stream", "judge", "dimension", "start", "end"],
                update_fields=["change_seen", "human_key", "stats", "computed_at"],
            )
            gone = [s.pk for span, s in stored.items() if span not in set(bounds)]
            StreamWindowStat.objects.filter(pk__in=gone).delete()
        for s in fresh:
            stored[(s.start, s.end)] = s
    else:
        fresh = []
    windows = [{"start": a, "end": b, **stored[(a, b)].stats} for a, b in bounds]
    alerts = list(alerts_of(stream, judge=judge, dimension=dimension).prefetch_related("deliveries"))
    return Series(stream, judge, dimension, windows, alerts, COMPUTED, recomputed=len(fresh))


def _computed(stream, judge, dimension, span, labels, times, last_change, human_key) -> StreamWindowStat:
    start, end = span
    in_window = TraceScore.objects.filter(
        stream=stream, judge=judge, dimension=dimension, timestamp__gte=start, timestamp__lt=end
    )
    judge_scores = dict(in_window.values_list("trace_id", "value"))
    n_traces = Trace.objects.filter(stream=stream, timestamp__gte=start, timestamp__lt=end).count()
    labelled = [pk for pk, when in times.items() if start <= when < end]
    rubric = stream.batch.rubric_obj
    stats = window_statistics(
        {pk: labels[pk] for pk in labelled},
        judge_scores,
        n_traces=n_traces,
        scale=(rubric.scale_min, rubric.scale_max),
        k=stream.k,
    )
    return StreamWindowStat(
        stream=stream,
        judge=judge,
        dimension=dimension,
        start=start,
        end=end,
        change_seen=last_change,
        human_key=human_key[:200],
        stats=stats,
    )


def series_refresh_all(*, stream_id: int) -> int:
    """Compute the stale windows of every judge × dimension series of the stream, then its change
    alerts (recording and sending the new ones): the worker's task. Returns how many windows were computed."""
    # Cleared first: traces that arrive while this runs queue the next refresh.
    Stream.objects.filter(pk=stream_id).update(series_refresh_queued=False)
    stream = Stream.objects.select_related("batch").filter(pk=stream_id).first()
    if stream is None:
        return 0
    computed = sum(
        series_refresh(stream=stream, judge=judge, dimension=dimension).recomputed
        for judge in stream.judges
        for dimension in stream.batch.rubric_obj.dimension_keys
    )
    alerts_refresh(stream=stream, bounds=_window_bounds(stream))
    return computed
