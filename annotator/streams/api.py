"""Streams over the API: make one, push traces (and labels made elsewhere), read the calibration series
and the alerts. Researchers and admins; see docs/streams.md."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, NoReturn

from django.conf import settings
from django.shortcuts import get_object_or_404
from django.urls import reverse
from ninja import Router, Schema
from ninja.responses import Status
from pydantic import ConfigDict, Field, WithJsonSchema

from annotator.api.auth import researchers
from annotator.api.problems import INVALID_REQUEST, Problem
from annotator.api.schemas import ERRORS
from annotator.models import Stream, StreamAlert
from annotator.streams.selectors import (
    COMPUTED,
    alerts_of,
    detection_progress,
    detector_settings,
    stored_labelled_counts,
)
from annotator.streams.services.ingest import MAX_TRACES, traces_ingest
from annotator.streams.services.streams import StreamRefused, stream_create

router = Router(tags=["streams"])


# The values are checked by the service (by key, converting nothing); the schema still tells clients their
# types and bounds.
NAME_PATTERN = "^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"
WINDOW_SCHEMA = {
    "oneOf": [
        {"type": "string", "enum": ["day", "week"]},
        {"type": "integer", "minimum": 2, "maximum": 100_000},
    ]
}
JUDGES_SCHEMA = {
    "type": "array",
    "maxItems": 20,
    "items": {
        "oneOf": [
            {"type": "string"},
            {"type": "object", "required": ["name", "template", "model"], "additionalProperties": True},
        ]
    },
}


class StreamIn(Schema):
    # An unknown key is refused: a misspelt ``judge`` or ``windw`` would otherwise be dropped unseen. The
    # values are taken as sent (Any) and checked by ``stream_settings_problems``, which converts nothing
    # (a string "0.3" or true is refused, not read as 0.3 or 1.0) and names each problem by its key.
    model_config = ConfigDict(extra="forbid")

    name: Annotated[Any, WithJsonSchema({"type": "string", "pattern": NAME_PATTERN})] = Field(
        description="letters, digits, '.', '_' or '-'"
    )
    human_rate: Annotated[Any, WithJsonSchema({"type": "number", "minimum": 1e-6, "maximum": 1})] = Field(
        description="share of traces sent to human review, a number from 0.000001 to 1"
    )
    k: Annotated[Any, WithJsonSchema({"type": "integer", "minimum": 3, "maximum": 1000})] = Field(
        3, description="independent human ratings per sampled trace, a whole number 3 to 1000"
    )
    window: Annotated[Any, WithJsonSchema(WINDOW_SCHEMA)] = Field(
        description="'day', 'week', or a whole number (2 to 100,000) of human-labelled (sampled) traces"
    )
    judges: Annotated[Any, WithJsonSchema(JUDGES_SCHEMA)] = Field(
        default_factory=list,
        description="the judges that score the traces: a name (its scores are pushed with the traces) or "
        "an object {name, template, model, provider?, base_url?, key_env?, max_cost_per_day?, currency?, "
        "price_in?, price_out?, temperature?, max_tokens?, concurrency?} (the worker runs it on every trace); "
        "at most 20",
    )
    rubric: Annotated[Any, WithJsonSchema({"type": ["object", "null"]})] = Field(
        None, description="a rubric like hcs/rubrics/hcs.json; default HCS"
    )


class StreamOut(Schema):
    name: str
    human_rate: float
    k: int
    window: str
    judges: list[str]
    judge_runs: list[dict[str, Any]]
    rubric: str
    dimensions: list[str]
    sampling_rule: str
    salt: str
    batch_id: int
    created_at: datetime
    url: str


class TracesIn(Schema):
    # As everywhere else, an unknown key is refused rather than dropped unseen.
    model_config = ConfigDict(extra="forbid")

    traces: list[Any] = Field(description=f"1 to {MAX_TRACES} traces")


class TraceErrorOut(Schema):
    index: int
    trace_id: str | None
    problems: list[str]


class TracesOut(Schema):
    accepted: int
    duplicates: int
    sampled: list[str]
    errors: list[TraceErrorOut]


class LabelErrorOut(Schema):
    index: int
    trace_id: str | None
    problems: list[str]


class LabelsOut(Schema):
    imported: int
    duplicates: int = 0
    errors: list[LabelErrorOut] = Field(default_factory=list)


def _stream(stream_name: str) -> Stream:
    return get_object_or_404(Stream.objects.select_related("batch"), name=stream_name)


def stream_out(request, stream: Stream) -> dict:
    rubric = stream.batch.rubric_obj
    return {
        "name": stream.name,
        "human_rate": stream.human_rate,
        "k": stream.k,
        "window": stream.window,
        "judges": stream.judges,
        "judge_runs": stream.judge_runs,
        "rubric": rubric.name,
        "dimensions": list(rubric.dimension_keys),
        "sampling_rule": stream.sampling_rule,
        "salt": stream.salt,
        "batch_id": stream.batch_id,
        "created_at": stream.created_at,
        "url": request.build_absolute_uri(reverse("api-v1:stream", kwargs={"stream_name": stream.name})),
    }


@router.post(
    "/streams",
    response={201: StreamOut, **ERRORS},
    auth=researchers,
    url_name="streams_create",
    summary="Create a stream (researchers)",
)
def streams_create(request, payload: StreamIn):
    """A named source of traces with its rubric, judges, human sampling rate, k and window. The sampling
    salt is drawn now and returned with the rule, so the sampled set can be recomputed."""
    from annotator.uploads.files.checks import rubric_from_data

    try:
        rubric = rubric_from_data(payload.rubric) if payload.rubric is not None else None
    except ValueError as exc:
        _refuse([f"rubric: {exc}"])
    try:
        stream = stream_create(
            name=payload.name,
            human_rate=payload.human_rate,
            k=payload.k,
            window=payload.window,
            judges=payload.judges,
            rubric=rubric,
            created_by=request.user,
        )
    except StreamRefused as exc:
        _refuse(exc.problems)
    return Status(201, stream_out(request, stream))


# "human_rate", "judges[0]", "judges[1].max_tokens": the key a problem of a stream's settings names.
PROBLEM_KEY = re.compile(r"^[a-z_]+(\[\d+\])?(\.[a-z_]+)?$")


def _sentence(text: str) -> str:
    text = text.strip().rstrip(".")
    return text[:1].upper() + text[1:] + "."


def _refuse(problems: list[str]) -> NoReturn:
    """A 422 naming each problem ("key: what is wrong") under its key, its message a whole sentence."""
    errors = []
    for problem in problems:
        key, _, rest = problem.partition(": ")
        if rest and PROBLEM_KEY.match(key):
            errors.append({"row": None, "column": key, "message": _sentence(rest)})
        else:
            errors.append({"row": None, "column": None, "message": _sentence(problem)})
    raise Problem(
        422,
        "The stream cannot be made: " + "; ".join(p.strip().rstrip(".") for p in problems) + ".",
        kind=INVALID_REQUEST,
        errors=errors,
    )


@router.get(
    "/streams",
    response={200: list[StreamOut], **ERRORS},
    auth=researchers,
    url_name="streams",
    summary="List streams (researchers)",
)
def streams(request):
    return [stream_out(request, s) for s in Stream.objects.select_related("batch").order_by("name")]


@router.get(
    "/streams/{stream_name}",
    response={200: StreamOut, **ERRORS},
    auth=researchers,
    url_name="stream",
    summary="One stream (researchers)",
)
def stream(request, stream_name: str):
    return stream_out(request, _stream(stream_name))


@router.post(
    "/streams/{stream_name}/traces",
    response={200: TracesOut, **ERRORS},
    auth=researchers,
    url_name="stream_traces",
    summary=f"Push up to {MAX_TRACES} traces (researchers)",
)
def stream_traces(request, stream_name: str, payload: TracesIn):
    """Each bad trace is named in ``errors`` (its 0-based index, its trace_id, what is wrong); the good
    ones are kept. A trace_id already stored is counted in ``duplicates`` and changes nothing.
    ``sampled`` lists the new traces sent to human review."""
    stream = _stream(stream_name)
    if not payload.traces:
        # Refused like an empty list of labels: an empty push is a sender's bug, not a quiet success.
        raise Problem(422, "No traces were given. Nothing was saved.", kind=INVALID_REQUEST)
    if len(payload.traces) > MAX_TRACES:
        raise Problem(
            422,
            f"At most {MAX_TRACES} traces per request; this one has {len(payload.traces)}. Nothing was saved.",
            kind=INVALID_REQUEST,
        )
    result = traces_ingest(stream=stream, traces=payload.traces)
    return {
        "accepted": result.accepted,
        "duplicates": result.duplicates,
        "sampled": result.sampled,
        "errors": result.errors,
    }


@router.post(
    "/streams/{stream_name}/annotations",
    response={200: LabelsOut, 201: LabelsOut, **ERRORS},
    auth=researchers,
    url_name="stream_annotations",
    summary="Import labels made elsewhere for sampled traces (researchers)",
)
def stream_annotations(request, stream_name: str, payload: list[Any]):
    """``[{"trace_id", "annotator", "scores": {dimension: whole number}, "constraints"?: [...]}]``, saved as
    annotations of the sampled traces' items. Like the traces endpoint, each bad label is named in
    ``errors`` (its 0-based index, its trace_id, what is wrong) and the good ones are kept; a label whose
    trace and annotator already have one is counted in ``duplicates`` and changes nothing. 201 when a
    label was saved, else 200."""
    from annotator.streams.services.annotations import MAX_LABELS, stream_annotations_import

    stream = _stream(stream_name)
    if len(payload) > MAX_LABELS:
        raise Problem(
            422,
            f"At most {MAX_LABELS} labels per request; this one has {len(payload)}. Nothing was saved.",
            kind=INVALID_REQUEST,
        )
    result = stream_annotations_import(stream=stream, labels=payload, created_by=request.user)
    body = {"imported": result.imported, "duplicates": result.duplicates, "errors": result.errors}
    return Status(201 if result.imported else 200, body)


def _judge_and_dimension(stream: Stream, judge: str | None, dimension: str | None) -> tuple[str, str]:
    dimensions = list(stream.batch.rubric_obj.dimension_keys)
    judge = judge or (stream.judges[0] if stream.judges else "")
    dimension = dimension or dimensions[0]
    if judge not in stream.judges:
        raise Problem(
            422, f"judge: {judge!r} is not one of the stream's judges {stream.judges}.", kind=INVALID_REQUEST
        )
    if dimension not in dimensions:
        raise Problem(422, f"dimension: {dimension!r} is not one of {dimensions}.", kind=INVALID_REQUEST)
    return judge, dimension


@router.get(
    "/streams/{stream_name}/calibration",
    response={200: dict[str, Any], **ERRORS},
    auth=researchers,
    url_name="stream_calibration",
    summary="The calibration series of one judge and dimension, per window (researchers)",
)
def stream_calibration(request, stream_name: str, judge: str | None = None, dimension: str | None = None):
    """One entry per window: its traces and human-labelled traces, the judge's agreement with people
    (quadratic-weighted κ), the human mean, its PPI++ estimate, the judge's mean and Krippendorff's α among
    people, each with a 95 % interval. Defaults: the stream's first judge and the rubric's first
    dimension. ``alerts`` are the stored change alerts of this judge and the stream-wide ones (product
    change, rater drift) on this dimension; ``alerts_status`` says they are computed."""
    from annotator.streams.services.series import series_refresh

    stream = _stream(stream_name)
    judge, dimension = _judge_and_dimension(stream, judge, dimension)
    series = series_refresh(stream=stream, judge=judge, dimension=dimension)
    return {
        "stream": stream.name,
        "judge": judge,
        "dimension": dimension,
        "window": stream.window,
        "windows": series.windows,
        "alerts": [alert_out(a) for a in series.alerts],
        "alerts_status": series.alerts_status,
        "detection": detection_progress(
            [w.get("n_human") or 0 for w in series.windows],
            reference_windows=detector_settings()["reference_windows"],
        ),
        "methods": methods_out(stream),
    }


def methods_out(stream: Stream) -> dict:
    """What the numbers assume, with the settings this stream's figures were made with."""
    return {
        "sampling": {
            "rule": stream.sampling_rule,
            "human_rate": stream.human_rate,
            "salt": stream.salt,
            "random": "each trace is sampled independently with probability human_rate, whatever its "
            "content, time or judge scores",
        },
        "detectors": detector_settings(),
        "false_alarm_bound": "per detector, P(any false alarm within horizon_windows windows after a "
        "reference) <= alpha",
        "refresh": "the background worker refreshes the stored windows and the alerts "
        f"{settings.STREAM_SERIES_REFRESH_DELAY_S} s after traces or labels arrive through the API",
        "docs": ["docs/streams.md", "docs/streams-statistics.md"],
    }


def alert_out(alert: StreamAlert) -> dict:
    """``since`` is the start of the window the change began in (estimated), ``detected_at`` the start of
    the window that raised the alert; ``evidence`` the detector's figures (docs/streams-statistics.md)."""
    detail = alert.detail or {}
    return {
        "event_id": str(alert.event_id),
        "kind": alert.kind,
        "judge": alert.judge or None,  # None: about the people or the product, not one judge
        "dimension": alert.dimension,
        "detected_at": detail.get("detected_at"),
        "since": detail.get("since", alert.window_start.isoformat()),
        "evidence": detail.get("evidence", {}),
        "window": {"start": alert.window_start, "end": alert.window_end},
        "detail": detail,
        "created_at": alert.created_at,
        "deliveries": [
            {
                "attempt": d.attempt,
                "at": d.attempted_at,
                "status_code": d.status_code,
                "ok": d.ok,
                "error": d.error,
            }
            for d in alert.deliveries.all()
        ],
    }


@router.get(
    "/streams/{stream_name}/alerts",
    response={200: dict[str, Any], **ERRORS},
    auth=researchers,
    url_name="stream_alerts",
    summary="The stream's recorded change alerts, newest first (researchers)",
)
def stream_alerts(request, stream_name: str):
    """Judge drift, product change and rater drift, as the worker's refresh found them after traces or
    labels arrived, each with its webhook delivery log."""
    stream = _stream(stream_name)
    alerts = alerts_of(stream).prefetch_related("deliveries")
    reference = detector_settings()["reference_windows"]
    counts = stored_labelled_counts(stream)
    return {
        "stream": stream.name,
        "alerts": [alert_out(a) for a in alerts],
        "alerts_status": COMPUTED,
        # Counted on the stored windows, which a stream without judges has none of: then left empty.
        "detection": {
            d: detection_progress(counts.get(d, []), reference_windows=reference)
            for d in (stream.batch.rubric_obj.dimension_keys if stream.judges else ())
        },
        "methods": methods_out(stream),
    }
