"""Reads for the streams' change alerts: per window, the labelled traces' human scores and each judge's
scores on the same traces (the input of ``hcs.streams.alerts.stream_alerts``), and the stored alerts."""

from __future__ import annotations

import bisect
import datetime as dt
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from annotator.models import AnnotatorStanding, Score, Stream, StreamAlert, Trace, TraceScore

if TYPE_CHECKING:  # numpy is imported where the arrays are made: the API and the pages load without it
    import numpy as np

# The API's ``alerts_status``: the worker computes the alerts with every refresh of the series.
COMPUTED = "computed"


@dataclass
class AlertData:
    """Per window (in time order): ``human[w]`` items × raters (NaN: not rated), and per judge its scores
    on the same items in the same order (NaN: not scored)."""

    human: list[np.ndarray]
    judges: dict[str, list[np.ndarray]]


def alerts_data(
    stream: Stream, dimensions, bounds: list[tuple[dt.datetime, dt.datetime]]
) -> dict[str, AlertData]:
    """``alert_data`` of every dimension in ``dimensions``: the traces, the excluded annotators, the human
    scores and the judges' scores are each read once for all of them (the worker's refresh reads every
    dimension; reading the sampled traces once per dimension was most of its time)."""
    import numpy as np

    dimensions = list(dimensions)
    excluded = AnnotatorStanding.objects.filter(batch_id=stream.batch_id, excluded=True).values_list(
        "annotator_id", flat=True
    )
    traces, when = {}, {}  # item → trace pk; trace pk → timestamp
    for item, pk, at in Trace.objects.filter(stream=stream, sampled=True).values_list(
        "item_id", "pk", "timestamp"
    ):
        traces[item], when[pk] = pk, at
    labels: dict[str, dict[int, dict[int, int]]] = {d: defaultdict(dict) for d in dimensions}
    for item, dimension, annotator, value in (
        Score.objects.filter(item__batch_id=stream.batch_id, dimension__in=dimensions)
        .exclude(annotation__annotator_id__in=list(excluded))
        .values_list("item_id", "dimension", "annotation__annotator_id", "value")
    ):
        if item in traces:
            labels[dimension][traces[item]][annotator] = value
    scores = {d: {judge: {} for judge in stream.judges} for d in dimensions}
    for pk, dimension, judge, value in TraceScore.objects.filter(
        stream=stream, dimension__in=dimensions, trace__sampled=True
    ).values_list("trace_id", "dimension", "judge", "value"):
        if judge in scores[dimension] and pk in labels[dimension]:
            scores[dimension][judge][pk] = value
    starts = [a for a, _ in bounds]
    out = {}
    for dimension in dimensions:
        per_window: list[list[int]] = [[] for _ in bounds]
        for pk in sorted(labels[dimension]):
            i = bisect.bisect_right(starts, when[pk]) - 1
            if i >= 0 and when[pk] < bounds[i][1]:
                per_window[i].append(pk)
        human = [_matrix([labels[dimension][pk] for pk in pks]) for pks in per_window]
        judges = {
            judge: [np.array([got.get(pk, np.nan) for pk in pks], dtype=float) for pks in per_window]
            for judge, got in scores[dimension].items()
        }
        out[dimension] = AlertData(human, judges)
    return out


def alert_data(stream: Stream, dimension: str, bounds: list[tuple[dt.datetime, dt.datetime]]) -> AlertData:
    """The labelled traces of each window of ``bounds`` on ``dimension``, excluded annotators left out."""
    return alerts_data(stream, [dimension], bounds)[dimension]


def _matrix(rows: list[dict[int, int]]) -> np.ndarray:
    import numpy as np

    raters = sorted({a for r in rows for a in r})
    column = {a: i for i, a in enumerate(raters)}
    out = np.full((len(rows), len(raters)), np.nan)
    for i, r in enumerate(rows):
        for a, v in r.items():
            out[i, column[a]] = v
    return out


def alerts_of(stream: Stream, *, judge: str | None = None, dimension: str | None = None):
    """The stream's stored alerts, newest first; with ``judge``, that judge's and the stream-wide ones
    (product change, rater drift)."""
    alerts = StreamAlert.objects.filter(stream=stream)
    if judge is not None:
        alerts = alerts.filter(judge__in=[judge, ""])
    if dimension is not None:
        alerts = alerts.filter(dimension=dimension)
    return alerts


# What the pages and the API say about the detectors: their settings, how far a series is from being
# watched, the statistic each one watches per window, and the list page's summary of each stream.


def detector_settings() -> dict:
    """The settings the worker's refresh runs the detectors with (``hcs.streams.alerts``' defaults)."""
    from hcs.streams.alerts import DEFAULT_ALPHA, DEFAULT_HORIZON, DEFAULT_REFERENCE_WINDOWS

    return {
        "reference_windows": DEFAULT_REFERENCE_WINDOWS,
        "alpha": DEFAULT_ALPHA,
        "horizon_windows": DEFAULT_HORIZON,
    }


def detection_progress(n_human: list[int], *, reference_windows: int) -> dict:
    """How far a dimension's windows (``n_human``: labelled traces per window, in time order) are from
    being watched. As in ``hcs.streams.alerts.detect_changes``, windows without labelled traces are
    skipped: the reference is the first ``reference_windows`` windows with labels, and each later window
    with labels is checked; ``monitored`` counts those (after an alert the next ``reference_windows`` of
    them are a new reference; the message says so). ``message`` says it in a sentence."""
    windows = len(n_human)
    labelled = sum(1 for n in n_human if n)
    so_far = min(labelled, reference_windows)
    monitored = max(0, labelled - reference_windows)
    needed = f"Detection starts after {reference_windows} windows with human labels (the reference)"
    if not sum(n_human):
        message = f"No human labels yet, so nothing can be detected. {needed}; 0 so far."
    elif so_far < reference_windows:
        message = f"Too few windows yet, so nothing can be detected. {needed}; {so_far} so far."
    elif not monitored:
        message = (
            f"The reference of {reference_windows} windows with human labels is complete; detection starts "
            "with the next window."
        )
    else:
        message = (
            f"Detection is on: {monitored} window{'s' * (monitored != 1)} with human labels after the first "
            f"{reference_windows} (the reference) {'have' if monitored != 1 else 'has'} been checked. After "
            f"an alert, the next {reference_windows} windows with labels become the new reference, and "
            "checking resumes after them."
        )
    return {
        "windows": windows,
        "labelled_traces": sum(n_human),
        "reference_windows": reference_windows,
        "reference_windows_so_far": so_far,
        "monitored_windows": monitored,
        "monitoring": monitored > 0,
        "message": message,
    }


def stored_labelled_counts(stream: Stream) -> dict[str, list[int]]:
    """Per dimension, the labelled traces of each window as the last refresh stored them (the series of
    the stream's first judge; every judge's series has the same windows and labels)."""
    from annotator.models import StreamWindowStat

    out: dict[str, list[int]] = {}
    if not stream.judges:
        return out
    for dimension, stats in (
        StreamWindowStat.objects.filter(stream=stream, judge=stream.judges[0])
        .order_by("dimension", "start")
        .values_list("dimension", "stats")
    ):
        out.setdefault(dimension, []).append(int((stats or {}).get("n_human") or 0))
    return out


def detector_means(
    stream: Stream, judge: str, dimension: str, bounds: list[tuple[dt.datetime, dt.datetime]]
) -> dict[str, list[tuple[float | None, int]]]:
    """Per alert kind, per window: the mean of the per-trace statistic its detector watches and the number
    of traces it is over (None: no trace). These are the figures an alert's ``before`` and ``after``
    average: ``judge_drift`` is ``judge``'s."""
    import numpy as np

    from hcs.streams.alerts import item_agreement, item_level, item_rater_agreement

    rubric = stream.batch.rubric_obj
    scale = (rubric.scale_min, rubric.scale_max)
    data = alert_data(stream, dimension, bounds)

    def means(values: list[np.ndarray]) -> list[tuple[float | None, int]]:
        out = []
        for v in values:
            v = v[np.isfinite(v)]  # as the detector reads them: traces without the statistic left out
            out.append((float(v.mean()) if v.size else None, int(v.size)))
        return out

    found = {}
    if judge in data.judges:
        found["judge_drift"] = means(
            [item_agreement(j, h, scale) for j, h in zip(data.judges[judge], data.human)]
        )
    found["product_change"] = means([item_level(h, scale) for h in data.human])
    found["rater_drift"] = means([item_rater_agreement(h, scale) for h in data.human])
    return found


def streams_overview() -> list[Stream]:
    """Every stream, by name, with ``n_alerts``, ``last_trace`` (the latest trace's timestamp) and
    ``latest_alert`` (the alert recorded last, or None)."""
    from django.db.models import Count, OuterRef, Subquery
    from django.db.models.functions import Coalesce

    mine = StreamAlert.objects.filter(stream=OuterRef("pk"))
    streams = list(
        Stream.objects.order_by("name").annotate(
            last_trace=Subquery(
                Trace.objects.filter(stream=OuterRef("pk")).order_by("-timestamp").values("timestamp")[:1]
            ),
            n_alerts=Coalesce(
                Subquery(mine.order_by().values("stream").annotate(n=Count("id")).values("n")[:1]), 0
            ),
            latest_alert_id=Subquery(mine.order_by("-created_at", "-id").values("id")[:1]),
        )
    )
    latest = StreamAlert.objects.in_bulk([s.latest_alert_id for s in streams if s.latest_alert_id])
    for s in streams:
        s.latest_alert = latest.get(s.latest_alert_id)
    return streams


def detector_means_cached(
    stream: Stream, judge: str, dimension: str, bounds: list[tuple[dt.datetime, dt.datetime]]
) -> dict[str, list[tuple[float | None, int]]]:
    """``detector_means``, kept in the cache while the series' data stays the same: read after
    ``series_refresh``, the stored windows' label fingerprints and last changes seen name that data (their
    labels, excluded annotators, traces and judge scores). Reading every label of the stream costs about
    0.35 s at 20,000 labelled traces, too much for each view of the page."""
    import hashlib

    from django.core.cache import cache

    from annotator.models import StreamWindowStat

    stored = StreamWindowStat.objects.filter(stream=stream, judge=judge, dimension=dimension).order_by(
        "start"
    )
    stamp = repr(
        (
            stream.pk,
            stream.created_at.isoformat(),
            judge,
            dimension,
            [(a.isoformat(), b.isoformat()) for a, b in bounds],
            list(stored.values_list("human_key", "change_seen")),
        )
    )
    key = "stream-detector-means:" + hashlib.sha256(stamp.encode("utf-8")).hexdigest()
    found = cache.get(key)
    if found is None:
        found = detector_means(stream, judge, dimension, bounds)
        cache.set(key, found, 24 * 3600)
    return found
