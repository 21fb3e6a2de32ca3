"""A stream's calibration series for one judge × dimension, kept per window.

Each window's numbers are stored (``StreamWindowStat``) and computed again only when its data changed:
a later ``StreamChange`` overlapping it (traces or judge scores arrived), or a different fingerprint
of its human labels (annotations submitted, edited or imported, or an annotator excluded). Reading a
series whose data did not change reads stored rows and a few aggregates only.
"""

from __future__ import annotations

import bisect
import datetime as dt
import operator
from collections import defaultdict
from dataclasses import dataclass, field
from functools import reduce
from typing import Any

from django.db import transaction
from django.db.models import Count, Max, Min, Q, Sum
from django.utils.module_loading import import_string

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

# A read computes its stale windows itself when there are at most this many (live traces touch one
# window, a rating one); more are left to the worker. At 10⁶ traces a window costs a read about 90 ms,
# so 3 keep the read near 350 ms on a loaded machine, under its 500 ms budget
# (bench/stream_refresh_bench.py; docs/streams.md has the figures).
READ_COMPUTES_AT_MOST = 3
REFRESH_QUEUE = "annotator.streams.services.refresh.series_refresh_queue"
# A window never computed shows its counts before the worker computes its statistics (a new stream's
# first ingest would otherwise look empty until then): one counting query per count, for at most this
# many windows (beyond, the counts wait for the worker too, like the statistics).
COUNTS_AT_MOST = 100
# Part of every stored window's key: raised when a window's formulas change, so every window stored by
# the old ones is computed again (by a read when few, else served stale and by the worker). 2: people's
# figures over every labelled trace, PPI++'s interval for the whole window, QWK and α withheld below 10;
# 3: PPI++ withheld below 10 labels and clipped to the scale, each withheld figure saying why.
STATS_VERSION = 3


@dataclass
class Series:
    stream: Stream
    judge: str
    dimension: str
    windows: list[dict[str, Any]] = field(default_factory=list)
    alerts: list[StreamAlert] = field(default_factory=list)  # stored: the worker's refresh computes them
    alerts_status: str = ""
    recomputed: int = 0  # windows computed on this read (the rest were stored)
    stale: int = 0  # windows served as stored while the worker computes them again


def _window_bounds(stream: Stream) -> list[tuple[dt.datetime, dt.datetime]]:
    if stream.window_count is None:
        # Every ingest marks the calendar windows it touched: their set is the windows with traces.
        # Each window once from the database: the rows grow with every ingest and labelling.
        return sorted(StreamChange.objects.filter(stream=stream).values_list("start", "end").distinct())
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
    return f"v{STATS_VERSION}:{agg['n']}:{agg['ids'] or 0}:{last}:{','.join(map(str, excluded))}"[:120]


def _human_labels(stream: Stream, dimension: str, excluded: list[int], spans=None):
    """The stream's human scores on ``dimension`` (only in the windows ``spans`` when given): per trace pk,
    {annotator: score}, with each trace's timestamp, and per trace the score ids the window fingerprints
    read (an edit writes its scores anew, so their ids change with it)."""
    sampled = Trace.objects.filter(stream=stream, sampled=True)
    if spans is not None:
        sampled = sampled.filter(_within(spans))
    traces = {item: (pk, when) for pk, item, when in sampled.values_list("pk", "item_id", "timestamp")}
    rows = Score.objects.filter(item__batch_id=stream.batch_id, dimension=dimension)
    if spans is not None:
        rows = rows.filter(item_id__in=sampled.values("item_id"))
    rows = rows.exclude(annotation__annotator_id__in=excluded).values_list(
        "item_id", "annotation__annotator_id", "value", "id"
    )
    labels: dict[int, dict[int, int]] = defaultdict(dict)
    marks: dict[int, list[int]] = defaultdict(list)
    times: dict[int, dt.datetime] = {}
    for item, annotator, value, score in rows:
        if item not in traces:
            continue
        pk, when = traces[item]
        labels[pk][annotator] = value
        marks[pk].append(score)
        times[pk] = when
    return labels, marks, times


def _within(spans) -> Q:
    return reduce(operator.or_, (Q(timestamp__gte=a, timestamp__lt=b) for a, b in spans))


def _window_key(bounds, marks, times) -> dict[tuple, str]:
    """Each window's fingerprint of its human labels: how many scores, the sum and the largest of their ids."""
    starts = [a for a, _ in bounds]
    parts: dict[int, list[int]] = defaultdict(list)
    for pk, when in times.items():
        i = bisect.bisect_right(starts, when) - 1
        if i >= 0 and when < bounds[i][1]:
            parts[i].extend(marks[pk])
    return {
        span: f"v{STATS_VERSION}:{len(found)}:{sum(found)}:{max(found, default=0)}"
        for span, found in ((span, parts.get(i, [])) for i, span in enumerate(bounds))
    }


def _overlaps(changes, seen: int, start, end) -> bool:
    return any(cid > seen and a < end and b > start for cid, a, b in changes)


def _stale_spans(bounds, stored, changes, stream_key) -> tuple[list, list]:
    """The windows whose data changed (no stored numbers, or a later ``StreamChange`` overlaps them), and
    those whose only sign is the stream-wide human key (labels changed somewhere in the stream)."""
    changed, keyed = [], []
    for span in bounds:
        s = stored.get(span)
        if s is None or _overlaps(changes, s.change_seen, *span):
            changed.append(span)
        elif not s.human_key.startswith(stream_key + "|"):
            keyed.append(span)
    return changed, keyed


def _too_many(spans: list, compute_at_most: int | None) -> bool:
    return compute_at_most is not None and len(spans) > compute_at_most


def series_refresh(
    *, stream: Stream, judge: str, dimension: str, compute_at_most: int | None = READ_COMPUTES_AT_MOST
) -> Series:
    """The series with its stored alerts, its stale windows computed again and stored when there are at
    most ``compute_at_most`` (None: however many, as the worker's refresh does). More are served as
    stored, each marked ``"stale": true``, and the worker's refresh is queued: a read right after a large
    backfill stays as quick as any other instead of computing the whole series in the request."""
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
    changed, keyed = _stale_spans(bounds, stored, changes, stream_key)
    fresh, stale = [], []
    if _too_many(changed, compute_at_most):
        stale = changed + keyed  # not told apart: that needs every label of the stream read
    elif changed or keyed:
        # Only the changed windows' labels when no other window needs its fingerprint checked.
        labels, marks, times = _human_labels(stream, dimension, excluded, None if keyed else changed)
        window_keys = _window_key(bounds, marks, times)
        # A window whose only difference is the stream-wide key (labels elsewhere changed) keeps its numbers.
        still = changed + [
            span for span in keyed if stored[span].human_key.split("|", 1)[1] != window_keys[span]
        ]
        recompute = set(still)
        rekey = [stored[span] for span in keyed if span not in recompute]
        for s in rekey:
            s.human_key = f"{stream_key}|{window_keys[(s.start, s.end)]}"
        StreamWindowStat.objects.bulk_update(rekey, ["human_key"])
        if _too_many(still, compute_at_most):
            stale = still
        else:
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
            _store(fresh, stored, bounds)
    if stale:
        _refresh_queued(stream)
    marked = set(stale)
    unknown = [span for span in bounds if span not in stored]
    counts = _counts(stream, judge, dimension, unknown, excluded) if len(unknown) <= COUNTS_AT_MOST else {}
    windows = [_window(span, stored.get(span), span in marked, counts.get(span)) for span in bounds]
    alerts = list(alerts_of(stream, judge=judge, dimension=dimension).prefetch_related("deliveries"))
    return Series(
        stream, judge, dimension, windows, alerts, COMPUTED, recomputed=len(fresh), stale=len(stale)
    )


def _store(fresh: list[StreamWindowStat], stored: dict, bounds) -> None:
    """Store the windows just computed and forget the stored ones that are no longer windows of the series."""
    with transaction.atomic():
        StreamWindowStat.objects.bulk_create(
            fresh,
            update_conflicts=True,
            unique_fields=["stream", "judge", "dimension", "start", "end"],
            update_fields=["change_seen", "human_key", "stats", "computed_at"],
        )
        spans = set(bounds)
        gone = [s.pk for span, s in stored.items() if span not in spans]
        StreamWindowStat.objects.filter(pk__in=gone).delete()
    for s in fresh:
        stored[(s.start, s.end)] = s


def _window(span, stat: StreamWindowStat | None, stale: bool, counts: dict | None = None) -> dict[str, Any]:
    """One window of the series as read: its stored numbers, or when it was never computed, its counts
    (when counted) and its statistics unknown (null) until the worker computes them."""
    return {
        "start": span[0],
        "end": span[1],
        **(stat.stats if stat is not None else {**_unknown(), **(counts or {})}),
        "stale": stale,
    }


def _counts(stream: Stream, judge: str, dimension: str, spans: list, excluded: list[int]) -> dict:
    """``n_traces``, ``n_human`` and ``n_judge`` of each window of ``spans``, as ``_computed`` counts them,
    in three queries (one conditional count per window in each)."""
    if not spans:
        return {}
    per = {
        f"w{i}": Count("pk", filter=Q(timestamp__gte=a, timestamp__lt=b)) for i, (a, b) in enumerate(spans)
    }
    rated = (
        Score.objects.filter(item__batch_id=stream.batch_id, dimension=dimension)
        .exclude(annotation__annotator_id__in=excluded)
        .values("item_id")
    )
    traces = Trace.objects.filter(stream=stream)
    found = {
        "n_traces": traces.aggregate(**per),
        "n_human": traces.filter(sampled=True, item_id__in=rated).aggregate(**per),
        "n_judge": TraceScore.objects.filter(stream=stream, judge=judge, dimension=dimension).aggregate(
            **per
        ),
    }
    return {span: {key: found[key][f"w{i}"] for key in found} for i, span in enumerate(spans)}


def _unknown() -> dict[str, Any]:
    blank = window_statistics({}, {}, n_traces=0, scale=(0, 1))
    return {**blank, **dict.fromkeys(("n_traces", "n_human", "n_judge", "n_paired"))}


def _refresh_queued(stream: Stream) -> None:
    """Make sure the worker will compute the stale windows (most often a refresh is queued already).
    Called by its dotted path: the task it queues runs this module."""
    if not stream.series_refresh_queued:
        import_string(REFRESH_QUEUE)(stream_id=stream.pk)


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
        series_refresh(stream=stream, judge=judge, dimension=dimension, compute_at_most=None).recomputed
        for judge in stream.judges
        for dimension in stream.batch.rubric_obj.dimension_keys
    )
    alerts_refresh(stream=stream, bounds=_window_bounds(stream))
    return computed
