"""A batch file of items to evaluate: CSV or JSONL, checked column by column.

Columns (CSV header or JSONL keys): ``item_id``, ``prompt``, ``response`` (required), ``system_id``,
``prompt_id``, ``context``, ``expected_output``, ``constraints``, ``conversation``, ``metadata``.
Any other column is kept in each item's ``metadata``. Each check is one pass over a column; JSON
cells are parsed once per distinct value.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from annotator.uploads.files.columns import Frame
from annotator.uploads.files.errors import RowError
from annotator.uploads.files.gold_columns import (
    GoldRow,
    gold_marks,
    gold_rows,
    gold_summary,
    is_gold_column,
)
from annotator.uploads.files.id_text import invisible_character
from annotator.uploads.files.json_text import has_nul, json_loads, json_problem, parse_constraints
from annotator.uploads.files.reading import JSONL, Table, read_table
from annotator.uploads.files.row_loop import Need, RowLoop
from hcs.rubric import Rubric

REQUIRED = ("item_id", "prompt", "response")
OPTIONAL = ("system_id", "prompt_id", "context", "expected_output", "constraints", "conversation", "metadata")
COLUMNS = REQUIRED + OPTIONAL
ID_MAX_LENGTH = 200
# What the services store, in this order.
OUTPUT_COLUMNS = (
    "item_id",
    "prompt_id",
    "position",
    "prompt",
    "response",
    "context",
    "expected_output",
    "constraints",
    "system_id",
    "conversation",
    "metadata",
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
    rows: Frame = field(repr=False)
    row_numbers: list[int] = field(
        default_factory=list, repr=False
    )  # the file row (or line) of each of ``rows``

    @property
    def unit(self) -> str:
        return "line" if self.format == JSONL else "row"

    # Gold items (training and check), taken out of ``rows``; ``gold_frame`` holds their item text.
    gold: list[GoldRow] = field(default_factory=list)
    gold_frame: Frame | None = field(default=None, repr=False)
    # Every gold row's kind by its position in the file, bad cells or not: what the preview counts.
    gold_marked: dict[int, str] = field(default_factory=dict, repr=False)

    @property
    def gold_counts(self) -> dict[str, int]:
        return gold_summary(self.gold_marked.values())

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def systems(self) -> dict[str, int]:
        if self.rows.empty:
            return {}
        counts = Counter(self.rows["system_id"])
        return {str(k) or "(none)": int(v) for k, v in sorted(counts.items())}

    @property
    def prompt_count(self) -> int:
        return len(set(self.rows["prompt_id"])) if not self.rows.empty else 0

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
    except (TypeError, ValueError, RecursionError):
        return text


def parse_batch_file(data: bytes, *, filename: str = "", rubric: Rubric | None = None) -> ParsedBatch:
    """Read and check a batch file. Raises ``FileRefused`` when the file as a whole is unreadable.

    Gold columns are checked against ``rubric`` (the default rubric when None)."""
    table = read_table(data, filename=filename)
    return parse_batch_table(table, rubric=rubric)


def parse_batch_table(table: Table, *, rubric: Rubric | None = None) -> ParsedBatch:
    loop = RowLoop(table)
    message = "is missing: the file needs the columns item_id, prompt and response"
    missing = loop.need(*(Need.one(name, message) for name in REQUIRED))
    extra = [c for c in table.columns if c and c not in COLUMNS and not is_gold_column(c)]
    if missing or any(e.row == 1 for e in loop.errors):
        return ParsedBatch(table.format, len(loop), table.columns, extra, loop.errors, loop.frame.head(0))
    # Each rule is one pass over a column; the errors are put in file order at the end.
    n, rows, text = len(loop), loop.rows, loop.text
    if table.format == JSONL:  # CSV text with a NUL is refused whole; JSON can smuggle one in as \u0000
        for name in table.columns:
            loop.flag([i for i, c in enumerate(text(name)) if "\x00" in c], name, "contains a NUL character")
    ids = _item_ids(loop)
    prompts, responses = text("prompt"), text("response")
    loop.flag([i for i, c in enumerate(prompts) if not c or c.isspace()], "prompt", "is empty")
    loop.flag([i for i, c in enumerate(responses) if not c or c.isspace()], "response", "is empty")
    short = {name: _short_id(loop, name) for name in ("system_id", "prompt_id")}
    by_prompt: dict[str, str] = {}
    out = {
        "item_id": ids,
        "prompt_id": [
            pid or by_prompt.get(p) or by_prompt.setdefault(p, prompt_id_for(p))
            for pid, p in zip(short["prompt_id"], prompts)
        ],
        "position": range(n),
        "prompt": prompts,
        "response": responses,
        "context": text("context"),
        "expected_output": text("expected_output"),
        "constraints": _json_column(
            text("constraints"), rows, table, loop.errors, "constraints", parse_constraints
        ),
        "system_id": short["system_id"],
        "conversation": _json_column(
            text("conversation"), rows, table, loop.errors, "conversation", parse_conversation
        ),
        "metadata": _metadata(loop.frame, text("metadata"), extra, rows, table, loop.errors),
    }
    result, kept, gold, gold_frame, marked = _take_gold(loop, Frame(out, n), out["constraints"], rubric)
    loop.sort_by_row_then_file_column()
    return ParsedBatch(
        table.format, n, table.columns, extra, loop.errors, result, kept, gold, gold_frame, marked
    )


def _item_ids(loop: RowLoop) -> list[str]:
    """The item ids, stripped; each must be given, short, visible and not used on an earlier row."""
    ids = [c.strip() for c in loop.text("item_id")]
    loop.flag([i for i, c in enumerate(ids) if not c], "item_id", "is empty")
    message = f"is longer than {ID_MAX_LENGTH} characters"
    loop.flag([i for i, c in enumerate(ids) if len(c) > ID_MAX_LENGTH], "item_id", message)
    rows = loop.rows
    for i, c in enumerate(ids):
        if (problem := invisible_character(c)) is not None:
            loop.add(rows[i], "item_id", problem)
    counts = Counter(ids)
    if len(counts) < len(ids):
        first_seen: dict[str, int] = {}
        for i in (i for i, c in enumerate(ids) if c and counts[c] > 1):
            first = first_seen.setdefault(ids[i], rows[i])
            if first != rows[i]:
                loop.add(rows[i], "item_id", f"`{ids[i]}` is already used on {loop.unit} {first}")
    return ids


def _short_id(loop: RowLoop, name: str) -> list[str]:
    values = [c.strip() for c in loop.text(name)]
    message = f"is longer than {ID_MAX_LENGTH} characters"
    loop.flag([i for i, c in enumerate(values) if len(c) > ID_MAX_LENGTH], name, message)
    return values


def _take_gold(
    loop: RowLoop, result: Frame, constraints: list[str], rubric: Rubric | None
) -> tuple[Frame, list[int], list[GoldRow], Frame | None, dict[int, str]]:
    """Gold items (checked against ``rubric``, the default when None) taken out of ``result``; returns
    the items kept, their file rows, the gold rows, the gold items' text and every gold row's kind.

    A gold row with a bad cell leaves the items too: it is refused as a gold row, and counting it
    as an item to rate would make the preview's figures wrong."""
    rows = loop.rows
    gold_cells = {c: loop.frame[c].tolist() for c in loop.columns if is_gold_column(c)}
    if not gold_cells:
        return result, [int(r) for r in rows], [], None, {}
    rubric = rubric or Rubric.default()
    gold = gold_rows(
        gold_cells,
        rows,
        rubric,
        lambda r, c, m: loop.add(r, c, m),
        n_constraints=[len(json.loads(c)) for c in constraints],
    )
    marked = gold_marks(gold_cells, len(loop), rubric)
    is_gold = [i in marked for i in range(len(loop))]
    gold_frame = result.rows([i for i in range(len(loop)) if is_gold[i]])
    result = result.rows([i for i in range(len(loop)) if not is_gold[i]])
    result["position"] = range(len(result))
    return result, [int(r) for r, g in zip(rows, is_gold) if not g], gold, gold_frame, marked


def prompt_id_for(prompt: str) -> str:
    """One id per distinct prompt text, the same in every file (so later imports group alike)."""
    return "p-" + hashlib.sha1(prompt.strip().encode("utf-8")).hexdigest()[:12]


def _json_column(values, rows, table, errors, column, parse) -> list[str]:
    """Parse the non-blank cells with ``parse`` (returns a value or raises ValueError), as JSON text.

    Equal cells are parsed once: constraint lists repeat across the systems of a prompt.
    """
    seen: dict[str, str | ValueError] = {"": "[]"}
    out = []
    for cell, r in zip(values, rows):
        result = seen.get(cell)
        if result is None:
            if cell.isspace():
                result = "[]"
            else:
                try:
                    result = json.dumps(parse(cell), ensure_ascii=False)
                except ValueError as exc:
                    result = exc
            seen[cell] = result
        if isinstance(result, ValueError):
            errors.append(table.error(int(r), column, str(result)))
            result = "[]"
        out.append(result)
    return out


def parse_conversation(cell: str) -> list[dict[str, str]]:
    try:
        value = json_loads(cell)
    except json.JSONDecodeError as exc:
        raise ValueError(f"is not valid JSON ({json_problem(exc)})") from None
    if not isinstance(value, list):
        raise ValueError('must be a JSON list of turns like [{"role": "user", "content": "..."}]')
    turns = []
    for number, turn in enumerate(value, start=1):
        if (
            not isinstance(turn, dict)
            or not isinstance(turn.get("role"), str)
            or not isinstance(turn.get("content"), str)
        ):
            raise ValueError(f"turn {number} must be an object with text fields `role` and `content`")
        if not turn["role"].strip():
            raise ValueError(f"turn {number} has an empty `role`")
        unknown = sorted(set(turn) - {"role", "content"})
        if unknown:
            raise ValueError(
                f"turn {number} has unknown fields: {', '.join(unknown)} (only `role` and `content`)"
            )
        if "\x00" in turn["content"] or "\x00" in turn["role"]:
            raise ValueError(f"turn {number} contains a NUL character")
        turns.append({"role": turn["role"].strip(), "content": turn["content"]})
    return turns


def _metadata(frame, given, extra, row, table, errors) -> list[str]:
    out = ["{}"] * len(frame)
    if not extra and not any(c and not c.isspace() for c in given):
        return out
    extra_values = [frame[c].tolist() for c in extra]
    for i, (cell, r) in enumerate(zip(given, row)):
        meta: dict[str, Any] = {}
        if cell and cell.strip():
            try:
                value = json_loads(cell)
            except json.JSONDecodeError as exc:
                errors.append(table.error(int(r), "metadata", f"is not valid JSON ({json_problem(exc)})"))
                continue
            if not isinstance(value, dict):
                errors.append(table.error(int(r), "metadata", "must be a JSON object"))
                continue
            if has_nul(value):
                errors.append(table.error(int(r), "metadata", "contains a NUL character"))
                continue
            meta.update(value)
        for name, values in zip(extra, extra_values):
            if values[i] != "":
                meta[name] = values[i]
        if meta:
            out[i] = json.dumps(meta, ensure_ascii=False)
    return out
