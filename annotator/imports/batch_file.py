"""A batch file of items to evaluate: CSV or JSONL, checked column by column.

Columns (CSV header or JSONL keys): ``item_id``, ``prompt``, ``response`` (required), ``system_id``,
``prompt_id``, ``context``, ``expected_output``, ``constraints``, ``conversation``, ``metadata``.
Any other column is kept in each item's ``metadata``. Checks run on whole columns with pandas;
the few that need per-cell parsing (JSON) loop once over the non-blank cells.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from annotator.imports.errors import RowError
from annotator.imports.reading import ROW, Table, read_table

REQUIRED = ("item_id", "prompt", "response")
OPTIONAL = ("system_id", "prompt_id", "context", "expected_output", "constraints", "conversation", "metadata")
COLUMNS = REQUIRED + OPTIONAL
ID_MAX_LENGTH = 200
# What the services store, in this order.
OUTPUT_COLUMNS = (
    "item_id", "prompt_id", "position", "prompt", "response", "context", "expected_output",
    "constraints", "system_id", "conversation", "metadata",
)


@dataclass
class ParsedBatch:
    """The outcome of reading a batch file. ``rows`` is only meaningful when ``errors`` is empty.

    ``rows`` holds ``OUTPUT_COLUMNS``; constraints, conversation and metadata are JSON text.
    """

    format: str
    row_count: int
    columns: list[str]
    extra_columns: list[str]
    errors: list[RowError]
    rows: pd.DataFrame = field(repr=False)

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def systems(self) -> dict[str, int]:
        if self.rows.empty:
            return {}
        counts = self.rows["system_id"].value_counts(sort=False)
        return {str(k) or "(none)": int(v) for k, v in sorted(counts.items())}

    @property
    def prompt_count(self) -> int:
        return int(self.rows["prompt_id"].nunique()) if not self.rows.empty else 0

    def preview_rows(self, n: int = 5) -> list[dict[str, Any]]:
        out = []
        for record in self.rows.head(n).to_dict("records"):
            for key in ("constraints", "conversation", "metadata"):
                record[key] = _loads_or_raw(record[key])
            out.append(record)
        return out


def _loads_or_raw(text: str) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text


def parse_batch_file(data: bytes, *, filename: str = "", max_bytes: int | None = None) -> ParsedBatch:
    """Read and check a batch file. Raises ``FileRefused`` when the file as a whole is unreadable."""
    table = read_table(data, filename=filename, max_bytes=max_bytes)
    return parse_batch_table(table)


def parse_batch_table(table: Table) -> ParsedBatch:
    frame = table.frame
    errors = list(table.errors)
    missing = [c for c in REQUIRED if c not in table.columns]
    for name in missing:
        errors.append(table.error(None, name, "is missing: the file needs the columns item_id, prompt and response"))
    extra = [c for c in table.columns if c and c not in COLUMNS]
    if missing or any(e.row == 1 for e in errors):
        return ParsedBatch(table.format, len(frame), table.columns, extra, errors, frame.iloc[0:0])

    row = frame[ROW]
    out = pd.DataFrame(index=frame.index)

    def text(name: str) -> pd.Series:
        return frame[name] if name in frame.columns else pd.Series("", index=frame.index, dtype=object)

    def flag(mask: pd.Series, column: str, message: str) -> None:
        errors.extend(table.error(int(r), column, message) for r in row[mask])

    for name in frame.columns:
        if name != ROW:
            flag(frame[name].str.contains("\x00", regex=False), name, "contains a NUL character")

    ids = text("item_id").str.strip()
    flag(ids.eq(""), "item_id", "is empty")
    flag(ids.str.len() > ID_MAX_LENGTH, "item_id", f"is longer than {ID_MAX_LENGTH} characters")
    dup = ids.ne("") & ids.duplicated(keep=False)
    if dup.any():
        first_row = row[dup].groupby(ids[dup]).transform("min")
        for r, value, first in zip(row[dup], ids[dup], first_row):
            if r != first:
                errors.append(table.error(int(r), "item_id", f"`{value}` is already used on {table.unit} {first}"))
    out["item_id"] = ids

    for name in ("prompt", "response"):
        flag(text(name).str.strip().eq(""), name, "is empty")
    for name in ("system_id", "prompt_id"):
        values = text(name).str.strip()
        flag(values.str.len() > ID_MAX_LENGTH, name, f"is longer than {ID_MAX_LENGTH} characters")
        out[name] = values

    prompts = text("prompt")
    blank_pid = out["prompt_id"].eq("")
    if blank_pid.any():
        out.loc[blank_pid, "prompt_id"] = [_prompt_id(p) for p in prompts[blank_pid]]
    out["position"] = range(len(frame))
    out["prompt"] = prompts
    out["response"] = text("response")
    out["context"] = text("context")
    out["expected_output"] = text("expected_output")
    out["constraints"] = _json_column(text("constraints"), row, table, errors, "constraints", _constraints)
    out["conversation"] = _json_column(text("conversation"), row, table, errors, "conversation", _conversation)
    out["metadata"] = _metadata(frame, text("metadata"), extra, row, table, errors)
    order = {name: i for i, name in enumerate(table.columns)}
    errors.sort(key=lambda e: (e.sort_key[0], order.get(e.column, -1)))
    return ParsedBatch(table.format, len(frame), table.columns, extra, errors, out[list(OUTPUT_COLUMNS)])


def _prompt_id(prompt: str) -> str:
    """One id per distinct prompt text, the same in every file (so later imports group alike)."""
    return "p-" + hashlib.sha1(prompt.strip().encode("utf-8")).hexdigest()[:12]


def _json_column(values, row, table, errors, column, parse) -> list[str]:
    """Parse the non-blank cells with ``parse`` (returns a value or raises ValueError)."""
    out = ["[]"] * len(values)
    for i, (cell, r) in enumerate(zip(values, row)):
        if not cell or not cell.strip():
            continue
        try:
            out[i] = json.dumps(parse(cell), ensure_ascii=False)
        except ValueError as exc:
            errors.append(table.error(int(r), column, str(exc)))
    return out


def _constraints(cell: str) -> list[str]:
    text = cell.strip()
    if text.startswith("["):
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"starts like a JSON list but is not valid JSON ({exc.msg} at character {exc.pos + 1})")
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError("must be a JSON list of texts, e.g. [\"avoid tolls\", \"arrive before 8AM\"]")
        parts = value
    else:
        parts = text.split(";")
    return [p.strip() for p in parts if p.strip()]


def _conversation(cell: str) -> list[dict[str, str]]:
    try:
        value = json.loads(cell)
    except json.JSONDecodeError as exc:
        raise ValueError(f"is not valid JSON ({exc.msg} at character {exc.pos + 1})")
    if not isinstance(value, list):
        raise ValueError("must be a JSON list of turns like [{\"role\": \"user\", \"content\": \"...\"}]")
    turns = []
    for number, turn in enumerate(value, start=1):
        if not isinstance(turn, dict) or not isinstance(turn.get("role"), str) or not isinstance(turn.get("content"), str):
            raise ValueError(f"turn {number} must be an object with text fields `role` and `content`")
        if not turn["role"].strip():
            raise ValueError(f"turn {number} has an empty `role`")
        unknown = sorted(set(turn) - {"role", "content"})
        if unknown:
            raise ValueError(f"turn {number} has unknown fields: {', '.join(unknown)} (only `role` and `content`)")
        if "\x00" in turn["content"] or "\x00" in turn["role"]:
            raise ValueError(f"turn {number} contains a NUL character")
        turns.append({"role": turn["role"].strip(), "content": turn["content"]})
    return turns


def _metadata(frame, given, extra, row, table, errors) -> list[str]:
    out = ["{}"] * len(frame)
    has_given = given.str.strip().ne("")
    if not extra and not has_given.any():
        return out
    extra_values = [frame[c].tolist() for c in extra]
    for i, (cell, r) in enumerate(zip(given, row)):
        meta: dict[str, Any] = {}
        if cell and cell.strip():
            try:
                value = json.loads(cell)
            except json.JSONDecodeError as exc:
                errors.append(table.error(int(r), "metadata", f"is not valid JSON ({exc.msg})"))
                continue
            if not isinstance(value, dict):
                errors.append(table.error(int(r), "metadata", "must be a JSON object"))
                continue
            meta.update(value)
        for name, values in zip(extra, extra_values):
            if values[i] != "":
                meta[name] = values[i]
        if meta:
            out[i] = json.dumps(meta, ensure_ascii=False)
    return out
