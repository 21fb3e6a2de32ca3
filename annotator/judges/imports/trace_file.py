"""Items from a JSONL of traces, with a field mapping in the online judge rules' path syntax.

A mapping line is ``field = path``: ``prompt = input.messages[-1].content``,
``context = output.messages[-2].content``, ``response = output.output``,
``input = input.messages[0][1].content`` (negative indexes count from the end). Fields are the batch
file's columns (``prompt`` and ``response`` required; ``input`` and ``output`` name them as the judge
rules do; ``item_id`` defaults to the trace's ``id``). Any other name (``more-context =
output.messages[-3].content``) is kept in the item's metadata, where judge templates find it. A field
written with a trailing ``?`` (``context? = output.messages[-2].content``) is optional: in a trace where
its path leads past the end of a list or to a key that is not there, the field is empty, as the judge
rules expect when no context is provided (``import_traces --template`` marks a template's optional
variables so). A path that meets the wrong kind of value is an error all the same.

Thread-level traces: with ``thread = <path>`` in the mapping, traces sharing that value become one item;
every trace contributes its user turn (``prompt``) and assistant turn (``response``) to the item's
conversation, and the item's prompt and response are the last trace's. Turns are ordered by the traces'
``start_time`` (the trace's own key, or the path mapped as ``start_time = <path>``; ISO 8601 or Unix
seconds), so a newest-first export gives the same thread; a thread in which a trace has none keeps
file order.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from annotator.turns import as_text, normalise_turns
from annotator.uploads.files.batch_file import COLUMNS, ParsedBatch, parse_batch_table
from annotator.uploads.files.columns import Frame
from annotator.uploads.files.errors import FileRefused, RowError
from annotator.uploads.files.file_size import check_size
from annotator.uploads.files.json_text import json_loads, json_problem
from annotator.uploads.files.reading import JSONL, ROW, Table, decode_text

_SEGMENT = re.compile(r"([A-Za-z_][\w\-]*)?((?:\[-?\d+\])*)$")
_INDEX = re.compile(r"\[(-?\d+)\]")
THREAD = "thread"
START = "start_time"
REQUIRED = ("prompt", "response", THREAD)  # never optional
_START = "\x00start"  # a record's start time, kept apart from the mapped fields
TARGETS = (*COLUMNS, THREAD)
ALIASES = {
    "input": "prompt",
    "output": "response",
}  # the judge rules' names for an item's prompt and response
_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")


class PathError(ValueError):
    """A path that is malformed or does not resolve in a trace."""


class PathMissing(PathError):
    """A path that leads past the end of a list or to a key the trace does not have."""


@dataclass(frozen=True)
class TracePath:
    text: str
    steps: tuple[str | int, ...]
    optional: bool = False  # a trace without it gives an empty field

    @classmethod
    def parse(cls, text: str, *, optional: bool = False) -> TracePath:
        text = text.strip()
        if not text:
            raise PathError("the path is empty")
        steps: list[str | int] = []
        for part in text.split("."):
            match = _SEGMENT.match(part)
            if not match or not (match.group(1) or match.group(2)):
                raise PathError(f"`{text}`: `{part}` is not a key optionally followed by [index]")
            if match.group(1):
                steps.append(match.group(1))
            steps.extend(int(i) for i in _INDEX.findall(match.group(2)))
        return cls(text, tuple(steps), optional)

    def resolve(self, trace: Any) -> Any:
        value, walked = trace, ""
        for step in self.steps:
            if isinstance(step, int):
                if not isinstance(value, list):
                    raise PathError(
                        f"`{self.text}`: `{walked or 'the trace'}` is not a list, cannot take [{step}]"
                    )
                if not -len(value) <= step < len(value):
                    raise PathMissing(
                        f"`{self.text}`: index [{step}] is out of range; `{walked}` has {len(value)} element(s)"
                    )
                value, walked = value[step], f"{walked}[{step}]"
            else:
                if not isinstance(value, dict):
                    raise PathError(
                        f"`{self.text}`: `{walked or 'the trace'}` is not an object, has no key `{step}`"
                    )
                if step not in value:
                    keys = ", ".join(map(str, list(value)[:8])) or "none"
                    raise PathMissing(
                        f"`{self.text}`: `{walked + '.' if walked else ''}{step}` does not exist (keys there: {keys})"
                    )
                value, walked = value[step], f"{walked}.{step}" if walked else step
        return value


def field_name(text: str) -> str:
    """A mapping line's field: ``input``/``output`` are the prompt and response; item columns in lower case."""
    field = text.strip()
    lower = field.lower()
    return ALIASES.get(lower, lower if lower in TARGETS else field)


def parse_mapping(text: str | Mapping[str, str]) -> dict[str, TracePath]:
    """``field = path`` lines (blank lines and ``#`` comments ignored), or a dict of the same."""
    pairs: list[tuple[int, str, str]] = []
    if isinstance(text, Mapping):
        pairs = [(n, k, v) for n, (k, v) in enumerate(text.items(), start=1)]
    else:
        for number, line in enumerate(str(text).splitlines(), start=1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            field, sep, path = line.partition("=")
            if not sep:
                raise PathError(f"mapping line {number}: `{line}` is not of the form field = path")
            pairs.append((number, field, path))
    mapping: dict[str, TracePath] = {}
    for number, field, path in pairs:
        optional = field.strip().endswith("?")
        field = field_name(field.strip().removesuffix("?"))
        if optional and field in REQUIRED:
            raise PathError(
                f"mapping line {number}: `{field}` cannot be optional (only other fields can end with ?)"
            )
        if not _FIELD.fullmatch(field):
            raise PathError(
                f"mapping line {number}: `{field}` is not a field name (letters, digits, _ and -); "
                f"item fields are {', '.join(TARGETS)}, any other name is kept in the item's metadata"
            )
        if field in mapping:
            raise PathError(f"mapping line {number}: `{field}` is mapped twice")
        try:
            mapping[field] = TracePath.parse(path, optional=optional)
        except PathError as exc:
            raise PathError(f"mapping line {number}: {exc}") from None
    for required in ("prompt", "response"):
        if required not in mapping:
            raise PathError(f"the mapping needs `{required} = <path>`")
    return mapping


def parse_trace_file(data: bytes, *, mapping: Mapping[str, TracePath]) -> ParsedBatch:
    """Resolve the mapping in every trace and check the resulting items like a batch file."""
    check_size(len(data))
    text = decode_text(data)
    if not text.strip():
        raise FileRefused("The file is empty.")
    errors: list[RowError] = []
    records: list[dict[str, Any]] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            trace = json_loads(line)
        except json.JSONDecodeError as exc:
            errors.append(RowError(number, None, f"is not valid JSON ({json_problem(exc)})", "line"))
            continue
        record: dict[str, Any] = {ROW: number}
        for field, path in mapping.items():
            try:
                record[field] = path.resolve(trace)
            except PathMissing as exc:
                if path.optional:
                    record[field] = ""
                else:
                    hint = "" if field in REQUIRED else " (end the field with ? if it may be absent)"
                    errors.append(RowError(number, field, f"{exc}{hint}", "line"))
            except PathError as exc:
                errors.append(RowError(number, field, str(exc), "line"))
        if "item_id" not in mapping:
            record["item_id"] = (
                trace.get("id", f"line-{number}") if isinstance(trace, dict) else f"line-{number}"
            )
        if THREAD in mapping:
            start = (
                record.get(START)
                if START in mapping
                else trace.get(START)
                if isinstance(trace, dict)
                else None
            )
            try:
                record[_START] = start_time(start)
            except ValueError as exc:
                errors.append(RowError(number, START, str(exc), "line"))
        records.append(record)
    if errors:
        return ParsedBatch(JSONL, len(records), list(mapping), [], errors, Frame())
    rows = _threads(records) if THREAD in mapping else [_single(r) for r in records]
    names = {k for r in rows for k in r if k != ROW}
    columns = [c for c in COLUMNS if c in names] + sorted(names - set(COLUMNS))
    frame = Frame({c: [r.get(c, "") for r in rows] for c in columns}, len(rows))
    frame[ROW] = [r[ROW] for r in rows]
    return parse_batch_table(Table(JSONL, frame, columns))


def _single(record: dict[str, Any]) -> dict[str, Any]:
    out = {k: as_text(v) for k, v in record.items() if k not in (ROW, "conversation")}
    out[ROW] = record[ROW]
    if "conversation" in record:
        out["conversation"] = json.dumps(normalise_turns(record["conversation"]), ensure_ascii=False)
    return out


def start_time(value: Any) -> datetime | None:
    """A trace's start time as an aware datetime (naive times are UTC); None when it has none.

    >>> start_time("2025-03-01T10:00:00Z") == start_time(1740823200)
    True
    """
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return datetime.fromtimestamp(value, tz=UTC)
    try:
        when = datetime.fromisoformat(str(value).strip())
    except ValueError:
        raise ValueError(
            f"`{as_text(value)[:40]}` is not a time (ISO 8601 such as 2025-03-01T10:00:00Z, or Unix seconds)"
        ) from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _in_time_order(traces: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A thread's traces by start time, file order among equal times and for traces without one."""
    if all(t[_START] is not None for t in traces):
        return sorted(traces, key=lambda t: t[_START])  # stable: equal times keep file order
    return traces


def _threads(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        groups.setdefault(as_text(record[THREAD]), []).append(record)
    rows = []
    for thread, traces in groups.items():
        first_line = traces[0][ROW]
        traces = _in_time_order(traces)
        last = traces[-1]
        turns = []
        for trace in traces:
            turns.append({"role": "user", "content": as_text(trace["prompt"])})
            turns.append({"role": "assistant", "content": as_text(trace["response"])})
        row = {k: as_text(v) for k, v in last.items() if k not in (ROW, THREAD, "conversation", _START)}
        row["item_id"] = thread
        row["conversation"] = json.dumps(turns, ensure_ascii=False)
        row[ROW] = first_line
        rows.append(row)
    return rows
