"""A file of annotations made offline (the guideline's CSV template, or JSONL with the same keys).

Each row is one annotator's scores for one item. Scores are checked with ``hcs.rubric`` (the
scale and the flag caps), so the file obeys exactly the rules of the rating page, except that a
blank score cell means "not rated on this dimension". Nothing here reads the database; the
checks against stored items and annotations are in ``annotator.uploads.selectors.plans``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from annotator.uploads.files.annotation_template import (  # the template's columns: also the export's
    CONSTRAINTS_MET,
    EXCLUDED,
    parse_constraints_met,
    template_columns,
)
from annotator.uploads.files.batch_file import (
    ID_MAX_LENGTH,
    parse_conversation,
    prompt_id_for,
)
from annotator.uploads.files.columns import Frame
from annotator.uploads.files.errors import RowError
from annotator.uploads.files.id_text import invisible_character
from annotator.uploads.files.json_text import parse_constraints
from annotator.uploads.files.reading import Table, read_table
from annotator.uploads.files.row_loop import Need, RowLoop
from hcs.checklist import CHECKLIST_FLAGS, checklist_flags
from hcs.rubric import Rubric, parse_score

ITEM_TEXT = (
    "system_id",
    "prompt",
    "response",
    "prompt_id",
    "context",
    "expected_output",
    "constraints",
    "conversation",
)
TRUE = {"1", "true", "yes", "y", "x"}
FALSE = {"", "0", "false", "no", "n"}
USERNAME = re.compile(r"^[\w.@+-]+\Z")
USERNAME_MAX_LENGTH = 150


@dataclass
class AnnotationRow:
    row: int
    item_id: str
    annotator: str
    scores: dict[str, int]  # only the rated dimensions
    flags: list[str]
    comment: str
    constraints_met: list[bool] = field(default_factory=list)  # per hard constraint of the item


@dataclass
class ParsedAnnotations:
    format: str
    row_count: int
    columns: list[str]
    errors: list[RowError]
    annotations: list[AnnotationRow] = field(default_factory=list, repr=False)
    # The item text given in the file, first row per item_id: item_id -> {column: value, "row": n}.
    items: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)
    unit: str = "row"
    # Every annotator named in the file, rows with problems included (for the preview's summary).
    annotator_names: set[str] = field(default_factory=set, repr=False)

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def annotators(self) -> list[str]:
        return sorted({a.annotator for a in self.annotations})

    def error(self, row: int | None, column: str | None, message: str) -> RowError:
        return RowError(row, column, message, self.unit)


def parse_flag(cell: str) -> bool | None:
    """1/0, true/false, yes/no (any case) or blank (not flagged); ``None`` for anything else."""
    value = cell.strip().lower()
    if value in TRUE:
        return True
    if value in FALSE:
        return False
    return None


def parse_annotation_file(data: bytes, *, rubric: Rubric, filename: str = "") -> ParsedAnnotations:
    """Read and check an annotation file. Raises ``FileRefused`` when the file is unreadable."""
    table = read_table(data, filename=filename)
    return parse_annotation_table(table, rubric=rubric)


def parse_annotation_table(table: Table, *, rubric: Rubric) -> ParsedAnnotations:
    loop = RowLoop(table)
    dims = [d for d in rubric.dimension_keys if loop.has(d)]
    _check_header(loop, rubric, dims)
    parsed = ParsedAnnotations(table.format, len(loop), table.columns, loop.errors, unit=table.unit)
    if loop.header_refused:
        return parsed
    parsed.annotations = loop.each(_RowCheck(loop, parsed, rubric, dims))
    dim_cells = {d: loop.text(d) for d in dims}
    loop.errors[:] = _one_error_for_another_scale(loop.errors, dim_cells, loop.rows, rubric, table)
    loop.sort_by_row_then_file_column()  # parsed.errors is the same list
    if loop.errors:
        parsed.annotations = []
    return parsed


def _check_header(loop: RowLoop, rubric: Rubric, dims: list[str]) -> None:
    """The file needs item_id, annotator and a score column, and names no column the template lacks."""
    known = {
        "item_id",
        "annotator",
        "comment",
        CONSTRAINTS_MET,
        EXCLUDED,
        *ITEM_TEXT,
        *rubric.dimension_keys,
        *rubric.flag_keys,
    }
    for name in ("item_id", "annotator"):
        loop.need(Need.one(name, "is missing: every row needs an item_id and an annotator"))
    if not dims:
        loop.add(
            None,
            None,
            "The file has no score columns; it needs at least one of "
            + ", ".join(rubric.dimension_keys)
            + ".",
        )
    for name in loop.columns:
        if name and name not in known:
            loop.add(
                None,
                name,
                "is not a column of the annotation template (check its spelling; "
                "columns: " + ", ".join(template_columns(rubric)) + ")",
            )


class _RowCheck:
    """The rules of one annotation row, with what they need of the whole file. Flags, answers and
    scores are checked once per distinct combination of a row's cells: a file repeats the same few."""

    def __init__(self, loop: RowLoop, parsed: ParsedAnnotations, rubric: Rubric, dims: list[str]):
        self.loop, self.parsed = loop, parsed
        flags = [f for f in rubric.flag_keys if loop.has(f)]
        self.item_ids = [v.strip() for v in loop.text("item_id")]
        self.annotators = [v.strip() for v in loop.text("annotator")]
        self.comments = loop.text("comment")
        self.item_cells = {c: loop.text(c) for c in ITEM_TEXT if loop.has(c)}
        self.keys = list(
            zip(
                *(loop.text(f) for f in flags),
                loop.text(CONSTRAINTS_MET),
                *(loop.text(d) for d in dims),
                strict=True,
            )
        )
        self.check_cells = _cell_checks(rubric, flags, dims)
        self.check_item_id, self.check_annotator = cache(_item_id_problems), cache(_annotator_problems)
        self.seen: dict[tuple[str, str], int] = {}

    def __call__(self, i: int, row: int, row_errors: list[RowError]) -> AnnotationRow:
        item_id, annotator, error = self.item_ids[i], self.annotators[i], self.loop.error
        problems = self.check_item_id(item_id) + self.check_annotator(annotator)
        active, met, scores, cell_problems = self.check_cells(self.keys[i])
        row_errors.extend(error(row, name, message) for name, message in problems + cell_problems)
        if annotator:
            self.parsed.annotator_names.add(annotator)
        if item_id and annotator:
            first = self.seen.setdefault((item_id, annotator), row)
            if first != row:
                row_errors.append(
                    error(
                        row,
                        "annotator",
                        f"`{annotator}` already rated item `{item_id}` on "
                        f"{self.loop.unit} {first}; one row per item and annotator",
                    )
                )
        if item_id:
            _collect_item(self.parsed, self.item_cells, i, row, item_id, row_errors, self.loop.table)
        return AnnotationRow(row, item_id, annotator, dict(scores), list(active), self.comments[i], list(met))


Problems = tuple[tuple[str | None, str], ...]  # (column, message) pairs, in the order they are reported


def _item_id_problems(item_id: str) -> Problems:
    if not item_id:
        return (("item_id", "is empty"),)
    if len(item_id) > ID_MAX_LENGTH:
        return (("item_id", f"is longer than {ID_MAX_LENGTH} characters"),)
    if (problem := invisible_character(item_id)) is not None:
        return (("item_id", problem),)
    return ()


def _annotator_problems(annotator: str) -> Problems:
    if not annotator:
        return (("annotator", "is empty"),)
    if len(annotator) > USERNAME_MAX_LENGTH or not USERNAME.match(annotator):
        return (
            (
                "annotator",
                f"`{annotator}` is not a valid user name (letters, digits and @ . + - _ only, at "
                f"most {USERNAME_MAX_LENGTH} characters)",
            ),
        )
    return ()


def _cell_checks(rubric: Rubric, flags: list[str], dims: list[str]):
    """A remembered check of one row's flag cells, constraint answers and score cells (``key``, in
    that order), with ``rubric.validate`` for the flags and for each score under those flags.
    Returns (active flags, answers, scores, problems); the caller copies what it keeps."""
    check_flags, check_score = _rubric_checks(rubric)

    @cache
    def check(key: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[bool, ...], dict[str, int], Problems]:
        flag_cells, met_cell, score_cells = key[: len(flags)], key[len(flags)], key[len(flags) + 1 :]
        problems: list[tuple[str | None, str]] = []
        active: list[str] = []
        for name, cell in zip(flags, flag_cells, strict=True):
            value = parse_flag(cell)
            if value is None:
                problems.append(
                    (
                        name,
                        f"`{cell.strip()}` is not a flag value; use 1/0, true/false, yes/no, "
                        "or leave it blank",
                    )
                )
            elif value:
                active.append(name)
        met = parse_constraints_met(met_cell)
        if met is None:
            met = []
            problems.append(
                (
                    CONSTRAINTS_MET,
                    f"`{met_cell.strip()}` is not a list of answers; write met or "
                    "not_met per hard constraint, separated by `;` (or leave it blank)",
                )
            )
        elif met:
            implied = checklist_flags(met, rubric.flag_keys)
            stated = set(active) & CHECKLIST_FLAGS
            if implied != stated:
                problems.append(
                    (
                        CONSTRAINTS_MET,
                        "the answers imply the flags "
                        f"{', '.join(sorted(implied)) or 'none'} but the row sets "
                        f"{', '.join(sorted(stated)) or 'none'}; make them agree",
                    )
                )
        problems.extend((", ".join(active), message) for message in check_flags(tuple(active)))
        scores: dict[str, int] = {}
        score_problem = False
        for name, cell in zip(dims, score_cells, strict=True):
            cell = cell.strip()
            if not cell:
                continue
            messages, score = check_score(name, cell, tuple(active))
            if messages:
                score_problem = True
                problems.extend((name, message) for message in messages)
            else:
                scores[name] = score
        if not scores and not score_problem:
            problems.append((None, "has no scores: rate at least one dimension"))
        return tuple(active), tuple(met), scores, tuple(problems)

    return check


def _rubric_checks(rubric: Rubric):
    """``rubric.validate`` for one row's flags and for one score cell under those flags, remembered."""

    @cache
    def check_flags(active: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(rubric.validate({}, active, require_all=False))

    @cache
    def check_score(name: str, cell: str, active: tuple[str, ...]) -> tuple[tuple[str, ...], int | None]:
        flag_problems = check_flags(active)
        problems = tuple(
            m for m in rubric.validate({name: cell}, active, require_all=False) if m not in flag_problems
        )
        return problems, (None if problems else parse_score(cell))

    return check_flags, check_score


# This many score cells outside the rubric's scale reads as a file on another scale, not as typos.
ANOTHER_SCALE_CELLS = 3


def _one_error_for_another_scale(errors, dim_cells, rows, rubric: Rubric, table: Table) -> list[RowError]:
    """Replace a line per out-of-scale score with one message when the file uses another scale."""
    outside = {}
    values: set[int] = set()
    for name, cells in dim_cells.items():
        numbers = {cell: parse_score(cell.strip()) if cell.strip() else None for cell in set(cells)}
        values.update(v for v in numbers.values() if v is not None)
        off_scale = {
            cell
            for cell, v in numbers.items()
            if v is not None and not rubric.scale_min <= v <= rubric.scale_max
        }
        if off_scale:
            outside.update(
                {
                    (row, name): numbers[cell]
                    for row, cell in zip(rows, cells, strict=True)
                    if cell in off_scale
                }
            )
    if len(outside) < ANOTHER_SCALE_CELLS:
        return errors
    scale = f"{rubric.scale_min}–{rubric.scale_max}"
    kept = [e for e in errors if not ((e.row, e.column) in outside and "is outside" in e.message)]
    first = min(outside)
    kept.append(
        table.error(
            None,
            None,
            f"The scores run from {min(values)} to {max(values)}: {len(outside)} score cells are outside the "
            f"rubric's {scale} scale (the first on {table.unit} {first[0]}, column `{first[1]}`), so the file looks "
            f"like it uses another scale. Convert the scores to {scale}, or import the file into a batch whose "
            "rubric has that scale.",
        )
    )
    return kept


def _collect_item(parsed, item_cells, i, row, item_id, row_errors, table) -> None:
    """Remember the item text of the first row of each item; later rows must agree with it."""
    known = parsed.items.get(item_id)
    if known is None:
        record: dict[str, Any] = {"row": row}
        for name, cells in item_cells.items():
            value = cells[i]
            if not value.strip():
                continue
            if name == "constraints":
                try:
                    record[name] = parse_constraints(value)
                except ValueError as exc:
                    row_errors.append(table.error(row, name, str(exc)))
            elif name == "conversation":
                try:
                    record[name] = parse_conversation(value)
                except ValueError as exc:
                    row_errors.append(table.error(row, name, str(exc)))
            elif name in ("system_id", "prompt_id"):
                record[name] = value.strip()
            else:
                record[name] = value
        parsed.items[item_id] = record
        return
    for name in ("system_id", "prompt", "response"):
        if name in known and item_cells[name][i] == known[name]:
            continue  # the common case, a later row repeating the item's text as the first gave it
        value = item_cells[name][i].strip() if name in item_cells else ""
        if value and name in known and value != str(known[name]).strip():
            row_errors.append(
                table.error(
                    row, name, f"differs from {table.unit} {known['row']} for the same item `{item_id}`"
                )
            )
        elif value and name not in known:
            known[name] = value


def new_item_frame(records: list[tuple[str, dict[str, Any]]]) -> Frame:
    """Rows for ``annotator.uploads.services.items.items_insert`` from ``ParsedAnnotations.items`` records."""
    as_json = cache(lambda value: json.dumps(value, ensure_ascii=False))  # "[]" for nearly every item

    def text(name: str) -> list[str]:
        return [record.get(name, "") for _, record in records]

    prompts = text("prompt")
    return Frame(
        {
            "item_id": [item_id for item_id, _ in records],
            "prompt_id": [
                record.get("prompt_id") or prompt_id_for(prompt)
                for (_, record), prompt in zip(records, prompts)
            ],
            "position": range(len(records)),
            "prompt": prompts,
            "response": text("response"),
            "context": text("context"),
            "expected_output": text("expected_output"),
            "constraints": [as_json(tuple(record.get("constraints", ()))) for _, record in records],
            "system_id": text("system_id"),
            "conversation": [
                json.dumps(record["conversation"], ensure_ascii=False) if "conversation" in record else "[]"
                for _, record in records
            ],
            "metadata": "{}",
        },
        len(records),
    )
