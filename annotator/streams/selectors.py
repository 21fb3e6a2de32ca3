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


def alert_data(stream: Stream, dimension: str, bounds: list[tuple[dt.datetime, dt.datetime]]) -> AlertData:
    """The labelled traces of each window of ``bounds`` on ``dimension``, excluded annotators left out."""
    import numpy as np

    excluded = AnnotatorStanding.objects.filter(batch_id=stream.batch_id, excluded=True).values_list(
        "annotator_id", flat=True
    )
    traces, when = {}, {}  # item → trace pk; trace pk → timestamp
    for item, pk, at in Trace.objects.filter(stream=stream, sampled=True).values_list(
        "item_id", "pk", "timestamp"
    ):
        traces[item], when[pk] = pk, at
    labels: dict[int, dict[int, int]] = defaultdict(dict)
    for item, annotator, value in (
        Score.objects.filter(item__batch_id=stream.batch_id, dimension=dimension)
        .exclude(annotation__annotator_id__in=list(excluded))
        .values_list("item_id", "annotation__annotator_id", "value")
    ):
        if item in traces:
            labels[traces[item]][annotator] = value
    scores: dict[str, dict[int, float]] = {judge: {} for judge in stream.judges}
    for pk, judge, value in TraceScore.objects.filter(
        stream=stream, dimension=dimension, trace__sampled=True
    ).values_list("trace_id", "judge", "value"):
        if judge in scores and pk in labels:
            scores[judge][pk] = value
    per_window: list[list[int]] = [[] for _ in bounds]
    starts = [a for a, _ in bounds]
    for pk in sorted(labels):
        i = bisect.bisect_right(starts, when[pk]) - 1
        if i >= 0 and when[pk] < bounds[i][1]:
            per_window[i].append(pk)
    human = [_matrix([labels[pk] for pk in pks]) for pks in per_window]
    judges = {
        judge: [np.array([got.get(pk, np.nan) for pk in pks], dtype=float) for pks in per_window]
        for judge, got in scores.items()
    }
    return AlertData(human, judges)


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
