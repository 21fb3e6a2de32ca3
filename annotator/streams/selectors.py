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
