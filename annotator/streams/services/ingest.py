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

from annotator.models import Item, Stream, Trace, TraceScore
from annotator.services.bulk import (
    analyze_after_commit,
    ids_reserve,
    rows_insert,
)
from annotator.streams.sampling import is_sampled
from annotator.streams.services.changes import changes_record
from annotator.streams.services.judging import pushed_scores_save
from annotator.streams.services.refresh import series_refresh_queue
from annotator.streams.tasks import judges_run_queue
from annotator.uploads.files.batch_file import prompt_id_for
from annotator.uploads.files.columns import Frame
from annotator.uploads.services.items import items_insert, next_position

MAX_TRACES = 1000  # per request
KEYS = ("trace_id", "timestamp", "prompt", "response", "context", "system_id", "metadata", "judge_scores")
ID_MAX, SYSTEM_MAX = 200, 200
FUTURE_SLACK = dt.timedelta(minutes=5)  # clock skew allowed to a sender
# No LLM trace predates this; a time before it is a default or a unit slip (0001-01-01, an epoch of 0),
# and one such trace would stretch the daily series over centuries of empty windows. A fixed bound, not
# a backfill horizon: a backfill of last year's logs stays possible without a setting.
OLDEST = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)
# Per text field (prompt, response, context; metadata as JSON): a chat trace is far below it, and one
# request of MAX_TRACES traces stays within the API's body limit's order of size.
FIELD_MAX = 100_000


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
    if value is not None and not isinstance(value, str):
        # A number is most often epoch seconds; the stream takes one form only, to be read one way.
        problems.append(
            f"`timestamp` must be an ISO 8601 string (e.g. 2026-03-01T12:00:00Z), not {type(value).__name__}"
        )
        return None
    if value is None or not value.strip():
        problems.append("`timestamp` is missing (an ISO 8601 time, e.g. 2026-03-01T12:00:00Z)")
        return None
    try:
        when = dt.datetime.fromisoformat(value.strip())
    except ValueError:
        problems.append(f"`timestamp` {value!r} is not an ISO 8601 time")
        return None
    # A time without an offset is read as UTC (docs/streams.md).
    try:
        when = when.replace(tzinfo=dt.UTC) if when.tzinfo is None else when.astimezone(dt.UTC)
    except OverflowError:  # 0001-01-01T00:00:00+01:00 is before the first representable UTC time
        when = dt.datetime.min.replace(tzinfo=dt.UTC)
    if when < OLDEST:
        problems.append(
            f"`timestamp` {value.strip()!r} is before {OLDEST:%Y-%m-%d} (UTC): no trace is that old, "
            "so it is taken for a default or a wrong unit"
        )
        return None
    latest = timezone.now() + FUTURE_SLACK
    if when > latest:
        # A trace from the future would sit in a window that has not begun, and a clock that is hours
        # ahead would quietly shift the series; a few minutes of clock skew are allowed.
        problems.append(
            f"`timestamp` {value.strip()!r} is in the future (more than "
            f"{FUTURE_SLACK.seconds // 60} minutes after the server's {timezone.now():%Y-%m-%dT%H:%M:%SZ})"
        )
        return None
    return when


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
    run_by_worker = {j["name"] for j in stream.judge_runs}
    out, seen = [], set()
    for n, score in enumerate(given):
        where = f"`judge_scores[{n}]`"
        if not isinstance(score, dict) or set(score) != {"judge", "dimension", "value"}:
            problems.append(f"{where} must be an object with exactly judge, dimension and value")
            continue
        judge, dimension, value = score["judge"], score["dimension"], score["value"]
        if judge not in stream.judges:
            problems.append(f"{where}: judge {judge!r} is not one of the stream's judges {stream.judges}")
        elif judge in run_by_worker:
            problems.append(
                f"{where}: judge {judge!r} is run by the worker on every trace; its scores are not pushed"
            )
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
    prompt = _text(raw, "prompt", problems, required=True, limit=FIELD_MAX)
    response = _text(raw, "response", problems, required=True, limit=FIELD_MAX)
    context = _text(raw, "context", problems, required=False, limit=FIELD_MAX)
    system_id = _text(raw, "system_id", problems, required=False, limit=SYSTEM_MAX)
    metadata = raw.get("metadata")
    if metadata is None:
        metadata = {}
    elif not isinstance(metadata, dict):
        problems.append("`metadata` must be a JSON object")
    # json.dumps writes a NUL as \u0000, which PostgreSQL's jsonb refuses.
    elif "\\u0000" in (text := json.dumps(metadata, ensure_ascii=False)):
        problems.append("`metadata` contains a NUL character")
    elif len(text) > FIELD_MAX:
        problems.append(f"`metadata` is longer than {FIELD_MAX} characters as JSON")
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


def _items_write(stream: Stream, batch_id: int, traces: list[_Good]) -> dict[str, int]:
    """``traces`` as new items of batch ``batch_id``; returns each trace_id's item pk."""
    if not traces:
        return {}
    ids = ids_reserve(model=Item, count=len(traces))
    frame = Frame(
        {
            "item_id": [t.trace_id for t in traces],
            "prompt_id": [prompt_id_for(t.prompt) for t in traces],
            "position": [0] * len(traces),  # set by items_insert
            "prompt": [t.prompt for t in traces],
            "response": [t.response for t in traces],
            "context": [t.context for t in traces],
            "expected_output": [""] * len(traces),
            "constraints": ["[]"] * len(traces),
            "system_id": [t.system_id for t in traces],
            "conversation": ["[]"] * len(traces),
            "metadata": [json.dumps({**t.metadata, "stream": stream.name}) for t in traces],
            "id": ids,
        }
    )
    items_insert(batch_id=batch_id, frame=frame, start_position=next_position(batch_id=batch_id))
    return dict(zip((t.trace_id for t in traces), ids, strict=True))


def _write(stream: Stream, traces: list[_Good]) -> list[str]:
    now = timezone.now()
    sampled = [t for t in traces if is_sampled(stream.salt, t.trace_id, stream.human_rate)]
    item_ids = _items_write(stream, stream.batch_id, sampled)
    if stream.judge_batch_id is not None:
        # The worker's judges score items: the unsampled traces become items of the closed judge batch
        # (the sampled ones are scored as the human batch's items, where the report compares them).
        _items_write(stream, stream.judge_batch_id, [t for t in traces if t.trace_id not in item_ids])
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
    pushed_scores_save(
        stream=stream,
        scores=[(item_ids[t.trace_id], j, d, v) for t in sampled for j, d, v in t.scores],
        now=now,
    )
    changes_record(stream, [t.timestamp for t in traces])
    transaction.on_commit(lambda: series_refresh_queue(stream_id=stream.pk), robust=True)
    if stream.judge_runs:
        transaction.on_commit(lambda: judges_run_queue(stream_id=stream.pk), robust=True)
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
