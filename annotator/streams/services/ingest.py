"""Taking traces into a stream: each checked on its own, the good ones written in bulk.

A bad trace is named (its index in the request, its trace_id, what is wrong) and the good ones of the
same request are kept. A trace_id already in the stream, or given twice in one request, is counted as
a duplicate and changes nothing. Sampled traces (``annotator.streams.sampling``) become items of the
stream's batch, so people rate them through the ordinary queue with exact k.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from dataclasses import dataclass, field
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from annotator.models import Item, Stream, StreamChange, Trace, TraceScore
from annotator.services.bulk import (
    analyze_after_commit,
    ids_reserve,
    rows_insert,
)
from annotator.streams.sampling import is_sampled
from annotator.streams.services.refresh import series_refresh_queue
from annotator.streams.windows import TICK, calendar_span
from annotator.uploads.files.batch_file import prompt_id_for
from annotator.uploads.files.columns import Frame
from annotator.uploads.services.items import items_insert, next_position

MAX_TRACES = 1000  # per request
KEYS = ("trace_id", "timestamp", "prompt", "response", "context", "system_id", "metadata", "judge_scores")
ID_MAX, SYSTEM_MAX = 200, 200


@dataclass
class IngestResult:
    accepted: int = 0
    duplicates: int = 0
    sampled: list[str] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class _Good:
    trace_id: str
    timestamp: dt.datetime
    prompt: str
    response: str
    context: str
    system_id: str
    metadata: dict
    scores: tuple[tuple[str, str, float], ...]


def _text(raw: dict, key: str, problems: list[str], *, required: bool, limit: int | None = None) -> str:
    value = raw.get(key)
    if value is None:
        if required:
            problems.append(f"`{key}` is missing")
        return ""
    if not isinstance(value, str):
        problems.append(f"`{key}` must be a string")
        return ""
    if required and not value.strip():
        problems.append(f"`{key}` is empty")
    if "\x00" in value:
        problems.append(f"`{key}` contains a NUL character")
    if limit is not None and len(value) > limit:
        problems.append(f"`{key}` is longer than {limit} characters")
    return value


def _timestamp(raw: dict, problems: list[str]) -> dt.datetime | None:
    value = raw.get("timestamp")
    if not isinstance(value, str) or not value.strip():
        problems.append("`timestamp` is missing (an ISO 8601 time, e.g. 2026-03-01T12:00:00Z)")
        return None
    try:
        when = dt.datetime.fromisoformat(value.strip())
    except ValueError:
        problems.append(f"`timestamp` {value!r} is not an ISO 8601 time")
        return None
    # A time without an offset is read as UTC (docs/streams.md).
    return when.replace(tzinfo=dt.UTC) if when.tzinfo is None else when.astimezone(dt.UTC)


def _scores(raw: dict, stream: Stream, problems: list[str]) -> tuple[tuple[str, str, float], ...]:
    given = raw.get("judge_scores")
    if given is None:
        return ()
    if not isinstance(given, list):
        problems.append("`judge_scores` must be a list of {judge, dimension, value}")
        return ()
    rubric = stream.batch.rubric_obj
    lo, hi = rubric.scale_min, rubric.scale_max
    dimensions = set(rubric.dimension_keys)
    out, seen = [], set()
    for n, score in enumerate(given):
        where = f"`judge_scores[{n}]`"
        if not isinstance(score, dict) or set(score) != {"judge", "dimension", "value"}:
            problems.append(f"{where} must be an object with exactly judge, dimension and value")
            continue
        judge, dimension, value = score["judge"], score["dimension"], score["value"]
        if judge not in stream.judges:
            problems.append(f"{where}: judge {judge!r} is not one of the stream's judges {stream.judges}")
        elif dimension not in dimensions:
            problems.append(f"{where}: dimension {dimension!r} is not in the rubric ({sorted(dimensions)})")
        elif isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            problems.append(f"{where}: value must be a number")
        elif not lo <= value <= hi:
            problems.append(f"{where}: value {value} is outside the rubric's scale {lo}–{hi}")
        elif (judge, dimension) in seen:
            problems.append(f"{where}: judge {judge!r} scores {dimension!r} twice")
        else:
            seen.add((judge, dimension))
            out.append((judge, dimension, float(value)))
    return tuple(out)


def trace_check(raw: Any, stream: Stream) -> tuple[_Good | None, list[str]]:
    """One trace: the checked values, or what is wrong with it."""
    if not isinstance(raw, dict):
        return None, ["a trace must be a JSON object"]
    problems = [f"unknown key `{key}`" for key in raw if key not in KEYS]
    trace_id = _text(raw, "trace_id", problems, required=True, limit=ID_MAX)
    when = _timestamp(raw, problems)
    prompt = _text(raw, "prompt", problems, required=True)
    response = _text(raw, "response", problems, required=True)
    context = _text(raw, "context", problems, required=False)
    system_id = _text(raw, "system_id", problems, required=False, limit=SYSTEM_MAX)
    metadata = raw.get("metadata")
    if metadata is None:
        metadata = {}
    elif not isinstance(metadata, dict):
        problems.append("`metadata` must be a JSON object")
    elif "\x00" in json.dumps(metadata):
        problems.append("`metadata` contains a NUL character")
    scores = _scores(raw, stream, problems)
    if problems:
        return None, problems
    return _Good(trace_id, when, prompt, response, context, system_id, metadata, scores), []


def traces_ingest(*, stream: Stream, traces: list[Any]) -> IngestResult:
    """Check every trace, then write the new good ones (and their judges' scores) in one transaction."""
    if len(traces) > MAX_TRACES:
        raise ValueError(f"at most {MAX_TRACES} traces per request, not {len(traces)}")
    result = IngestResult()
    good: dict[str, _Good] = {}
    for index, raw in enumerate(traces):
        trace, problems = trace_check(raw, stream)
        if trace is None:
            trace_id = raw.get("trace_id") if isinstance(raw, dict) else None
            result.errors.append(
                {
                    "index": index,
                    "trace_id": trace_id if isinstance(trace_id, str) else None,
                    "problems": problems,
                }
            )
        elif trace.trace_id in good:
            result.duplicates += 1
        else:
            good[trace.trace_id] = trace
    if not good:
        return result
    with transaction.atomic():
        # One writer per stream at a time: a trace_id seen by two requests at once is stored once.
        Stream.objects.select_for_update().filter(pk=stream.pk).values_list("pk").get()
        stored = set(
            Trace.objects.filter(stream=stream, trace_id__in=list(good)).values_list("trace_id", flat=True)
        )
        new = [t for t in good.values() if t.trace_id not in stored]
        result.duplicates += len(good) - len(new)
        if new:
            result.sampled = _write(stream, new)
        result.accepted = len(new)
    return result


def _write(stream: Stream, traces: list[_Good]) -> list[str]:
    now = timezone.now()
    sampled = [t for t in traces if is_sampled(stream.salt, t.trace_id, stream.human_rate)]
    item_ids = dict(
        zip((t.trace_id for t in sampled), ids_reserve(model=Item, count=len(sampled)), strict=True)
    )
    if sampled:
        frame = Frame(
            {
                "item_id": [t.trace_id for t in sampled],
                "prompt_id": [prompt_id_for(t.prompt) for t in sampled],
                "position": [0] * len(sampled),  # set by items_insert
                "prompt": [t.prompt for t in sampled],
                "response": [t.response for t in sampled],
                "context": [t.context for t in sampled],
                "expected_output": [""] * len(sampled),
                "constraints": ["[]"] * len(sampled),
                "system_id": [t.system_id for t in sampled],
                "conversation": ["[]"] * len(sampled),
                "metadata": [json.dumps({**t.metadata, "stream": stream.name}) for t in sampled],
                "id": [item_ids[t.trace_id] for t in sampled],
            }
        )
        items_insert(
            batch_id=stream.batch_id, frame=frame, start_position=next_position(batch_id=stream.batch_id)
        )
    trace_pks = ids_reserve(model=Trace, count=len(traces))
    when = Trace._meta.get_field("timestamp")
    db_time = {t.trace_id: when.get_db_prep_save(t.timestamp, connection) for t in traces}
    rows_insert(
        model=Trace,
        fields=(
            "id",
            "trace_id",
            "timestamp",
            "prompt",
            "response",
            "context",
            "system_id",
            "metadata",
            "sampled",
            "item",
        ),
        rows=(
            (
                pk,
                t.trace_id,
                db_time[t.trace_id],
                t.prompt,
                t.response,
                t.context,
                t.system_id,
                json.dumps(t.metadata, ensure_ascii=False),
                t.trace_id in item_ids,
                item_ids.get(t.trace_id),
            )
            for pk, t in zip(trace_pks, traces, strict=True)
        ),
        constants={"stream": stream.pk, "received_at": now},
    )
    rows_insert(
        model=TraceScore,
        fields=("trace", "timestamp", "judge", "dimension", "value"),
        rows=(
            (pk, db_time[t.trace_id], judge, dimension, value)
            for pk, t in zip(trace_pks, traces, strict=True)
            for judge, dimension, value in t.scores
        ),
        constants={"stream": stream.pk},
    )
    changes_record(stream, [t.timestamp for t in traces])
    transaction.on_commit(lambda: series_refresh_queue(stream_id=stream.pk), robust=True)
    if _doubled(trace_pks[0], trace_pks[-1]):
        # The planner's statistics, refreshed by the worker each time the trace table doubles: planned
        # for a small table, the duplicate check reads every trace of the stream instead of the unique index.
        analyze_after_commit(Trace, TraceScore, Item)
    return [t.trace_id for t in sampled]


def _doubled(first: int, last: int) -> bool:
    """Whether ids first..last cross a power of two from 1,024 up (ids grow with the table).

    >>> _doubled(1000, 1999), _doubled(1025, 2047), _doubled(2000, 2100)
    (True, False, True)
    """
    return any(first <= 2**p <= last for p in range(10, 48))


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
