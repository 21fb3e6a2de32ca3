"""A file of LLM-judge scores: CSV or JSONL, one row per item × dimension.

Columns: ``item_id``, ``dimension`` (a rubric dimension key or ``overall``), and either ``score`` (a number
on the declared judge scale) or ``raw_output`` (the judge's own text, from which the score is read);
optionally ``reason``. When both ``score`` and ``raw_output`` are given, ``score`` wins and the text is kept.
An ``OutputSpec`` names the verdict key and reason key the judge was asked for and its verdict labels
(``Very Good`` → 3); a fraction is read only out of the scale's maximum. A refused row quotes its raw text.
Nothing here touches the database: the caller passes the batch's item ids and dimensions.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from annotator.imports.errors import RowError
from annotator.imports.reading import ROW, Table, read_table
from hcs.judge_output import (
    JudgeOutputError,
    JudgeScale,
    OutputSpec,
    parse_score,
    read_value,
)

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
    criterion: str = ""  # the judge's own criterion this row scores ("" for a rubric dimension or overall)


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
    output: OutputSpec | None = None,
    criteria: Mapping[str, str] | None = None,
) -> ParsedJudgeScores:
    """Read and check every row; ``errors`` lists each bad row by number. Raises ``FileRefused``."""
    return parse_judge_table(
        read_table(data, filename=filename),
        item_ids=item_ids,
        dimensions=dimensions,
        scale=scale,
        rubric_scale=rubric_scale,
        output=output,
        criteria=criteria,
    )


def _quoted(text: str, limit: int = 120) -> str:
    flat = " ".join(str(text).split())
    return f" (the text: \u201c{flat[:limit]}{'…' if len(flat) > limit else ''}\u201d)"


def parse_judge_table(
    table: Table,
    *,
    item_ids: Collection[str],
    dimensions: Collection[str],
    scale: JudgeScale,
    rubric_scale: tuple[int, int] = (1, 5),
    output: OutputSpec | None = None,
    criteria: Mapping[str, str] | None = None,
) -> ParsedJudgeScores:
    """``criteria`` (when given) accepts the judge's own criteria as dimensions, each kept under its own
    name and, when it maps onto a rubric dimension, scored on that dimension too."""
    spec = (
        OutputSpec(
            scale=scale, verdict_key=output.verdict_key, reason_key=output.reason_key, labels=output.labels
        )
        if output
        else OutputSpec(scale=scale)
    )
    errors = list(table.errors)
    columns = set(table.columns)
    for name in ("item_id", "dimension"):
        if name not in columns:
            errors.append(
                table.error(
                    None, name, "is missing: the file needs item_id, dimension and score (or raw_output)"
                )
            )
    if not columns & {"score", "raw_output"}:
        errors.append(
            table.error(None, "score", "is missing: give a `score` column or a `raw_output` column")
        )
    if errors:
        return ParsedJudgeScores(table.format, errors)
    allowed = set(dimensions) | {OVERALL}
    known = set(item_ids)
    seen: dict[tuple[str, str], int] = {}
    rows: list[JudgeRow] = []
    frame = table.frame

    def get(record, name):
        return str(record.get(name, "") or "").strip() if name in columns else ""

    for record in frame.to_dict("records"):
        number = int(record[ROW])
        item_id, dimension = get(record, "item_id"), get(record, "dimension").lower()
        raw_output = str(record.get("raw_output", "") or "") if "raw_output" in columns else ""
        problems = []
        if not item_id:
            problems.append(table.error(number, "item_id", "is empty"))
        elif item_id not in known:
            problems.append(table.error(number, "item_id", f"`{item_id}` is not an item of this batch"))
        criterion = ""
        if criteria is not None and dimension and dimension not in allowed:
            criterion, dimension = dimension, criteria.get(dimension, "")
            if dimension and dimension not in allowed:
                problems.append(
                    table.error(
                        number, "dimension", f"`{criterion}` maps onto `{dimension}`, not a rubric dimension"
                    )
                )
        if not dimension and not criterion:
            problems.append(table.error(number, "dimension", "is empty"))
        elif dimension and dimension not in allowed:
            problems.append(
                table.error(number, "dimension", f"`{dimension}` is not one of {', '.join(sorted(allowed))}")
            )
        for what in filter(None, (dimension, criterion)):
            key = (item_id, what if what == dimension else f"criterion:{what}")
            if item_id and key in seen:
                problems.append(
                    table.error(
                        number,
                        "dimension",
                        f"`{item_id}` × `{what}` already appears on {table.unit} {seen[key]}",
                    )
                )
            seen.setdefault(key, number)
        score_text = get(record, "score")
        reason = get(record, "reason")
        raw_value = None
        if score_text:
            try:
                raw_value = read_value(score_text, spec, f"`{score_text}`")
            except JudgeOutputError as exc:
                problems.append(table.error(number, "score", str(exc)))
        elif raw_output.strip():
            try:
                parsed = parse_score(raw_output, dimension=criterion or dimension or None, spec=spec)
                raw_value, reason = parsed.value, reason or parsed.reason
            except JudgeOutputError as exc:
                problems.append(
                    table.error(number, "raw_output", f"no score could be read: {exc}{_quoted(raw_output)}")
                )
        else:
            problems.append(
                table.error(number, "score", "is empty and there is no raw_output to read it from")
            )
        value = None
        if raw_value is not None:
            try:
                value = scale.to_rubric(raw_value, *rubric_scale)
            except JudgeOutputError as exc:
                column = "score" if score_text else "raw_output"
                problems.append(
                    table.error(number, column, str(exc) + ("" if score_text else _quoted(raw_output)))
                )
        if problems:
            errors.extend(problems)
            continue
        rows.append(JudgeRow(number, item_id, dimension, raw_value, value, reason, raw_output, criterion))
    if not rows and not errors:
        errors.append(table.error(None, None, "The file has no scores."))
    return ParsedJudgeScores(table.format, sorted(errors, key=lambda e: e.sort_key), rows)
