"""A file of LLM-judge scores: CSV or JSONL, one row per item × dimension.

Columns: ``item_id``, ``dimension`` (a rubric dimension key or ``overall``), and either ``score`` (a number
on the declared judge scale) or ``raw_output`` (the judge's own text, from which the score is read);
optionally ``reason``. When both ``score`` and ``raw_output`` are given, ``score`` wins and the text is kept.
Nothing here touches the database: the caller passes the batch's item ids and dimensions.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from annotator.imports.errors import RowError
from annotator.imports.reading import ROW, Table, read_table
from hcs.judge_output import JudgeOutputError, JudgeScale, parse_score

OVERALL = "overall"


@dataclass(frozen=True)
class JudgeRow:
    row: int
    item_id: str
    dimension: str
    raw_value: float
    value: float
    reason: str
    raw_output: str


@dataclass
class ParsedJudgeScores:
    format: str
    errors: list[RowError]
    rows: list[JudgeRow] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def dimensions(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for row in self.rows:
            counts[row.dimension] = counts.get(row.dimension, 0) + 1
        return counts


def parse_judge_file(
    data: bytes,
    *,
    filename: str = "",
    item_ids: Collection[str],
    dimensions: Collection[str],
    scale: JudgeScale,
    rubric_scale: tuple[int, int] = (1, 5),
    max_bytes: int | None = None,
) -> ParsedJudgeScores:
    """Read and check every row; ``errors`` lists each bad row by number. Raises ``FileRefused``."""
    return parse_judge_table(
        read_table(data, filename=filename, max_bytes=max_bytes),
        item_ids=item_ids,
        dimensions=dimensions,
        scale=scale,
        rubric_scale=rubric_scale,
    )


def parse_judge_table(
    table: Table,
    *,
    item_ids: Collection[str],
    dimensions: Collection[str],
    scale: JudgeScale,
    rubric_scale: tuple[int, int] = (1, 5),
) -> ParsedJudgeScores:
    errors = list(table.errors)
    columns = set(table.columns)
    for name in ("item_id", "dimension"):
        if name not in columns:
            errors.append(table.error(None, name, "is missing: the file needs item_id, dimension and score (or raw_output)"))
    if not columns & {"score", "raw_output"}:
        errors.append(table.error(None, "score", "is missing: give a `score` column or a `raw_output` column"))
    if errors:
        return ParsedJudgeScores(table.format, errors)
    allowed = set(dimensions) | {OVERALL}
    known = set(item_ids)
    seen: dict[tuple[str, str], int] = {}
    rows: list[JudgeRow] = []
    frame = table.frame
    get = lambda record, name: str(record.get(name, "") or "").strip() if name in columns else ""
    for record in frame.to_dict("records"):
        number = int(record[ROW])
        item_id, dimension = get(record, "item_id"), get(record, "dimension").lower()
        raw_output = str(record.get("raw_output", "") or "") if "raw_output" in columns else ""
        problems = []
        if not item_id:
            problems.append(table.error(number, "item_id", "is empty"))
        elif item_id not in known:
            problems.append(table.error(number, "item_id", f"`{item_id}` is not an item of this batch"))
        if not dimension:
            problems.append(table.error(number, "dimension", "is empty"))
        elif dimension not in allowed:
            problems.append(
                table.error(number, "dimension", f"`{dimension}` is not one of {', '.join(sorted(allowed))}")
            )
        key = (item_id, dimension)
        if item_id and dimension and key in seen:
            problems.append(
                table.error(number, "dimension", f"`{item_id}` × `{dimension}` already appears on {table.unit} {seen[key]}")
            )
        seen.setdefault(key, number)
        score_text = get(record, "score")
        reason = get(record, "reason")
        raw_value = None
        if score_text:
            try:
                raw_value = float(score_text)
            except ValueError:
                problems.append(table.error(number, "score", f"`{score_text}` is not a number"))
        elif raw_output.strip():
            try:
                parsed = parse_score(raw_output, dimension=dimension or None)
                raw_value, reason = parsed.value, reason or parsed.reason
            except JudgeOutputError as exc:
                problems.append(table.error(number, "raw_output", f"no score could be read: {exc}"))
        else:
            problems.append(table.error(number, "score", "is empty and there is no raw_output to read it from"))
        value = None
        if raw_value is not None:
            try:
                value = scale.to_rubric(raw_value, *rubric_scale)
            except JudgeOutputError as exc:
                column = "score" if score_text else "raw_output"
                problems.append(table.error(number, column, str(exc)))
        if problems:
            errors.extend(problems)
            continue
        rows.append(JudgeRow(number, item_id, dimension, raw_value, value, reason, raw_output))
    if not rows and not errors:
        errors.append(table.error(None, None, "The file has no scores."))
    return ParsedJudgeScores(table.format, sorted(errors, key=lambda e: e.sort_key), rows)
