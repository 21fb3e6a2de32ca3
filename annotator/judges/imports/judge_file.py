"""A file of LLM-judge scores: CSV or JSONL, one row per item × dimension.

Columns: ``item_id``, ``dimension`` (a rubric dimension key or ``overall``), and either ``score`` (a number
on the declared judge scale) or ``raw_output`` (the judge's own text, from which the score is read);
optionally ``reason``. When both ``score`` and ``raw_output`` are given, ``score`` wins and the text is kept.
An ``OutputSpec`` names the verdict key and reason key the judge was asked for and its verdict labels
(``Very Good`` → 3); a fraction is read only out of the scale's maximum. A refused row quotes its raw text.
The same raw output on the rows of several dimensions of one item must name each dimension it scores.
Nothing here touches the database: the caller passes the batch's item ids and dimensions.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace

from annotator.uploads.files.errors import RowError
from annotator.uploads.files.reading import Table, read_table
from annotator.uploads.files.row_loop import Need, RowLoop
from hcs.judge_output import (
    JudgeOutputError,
    JudgeScale,
    OutputSpec,
    parse_named_scores,
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
    loop = RowLoop(table)
    for name in ("item_id", "dimension"):
        loop.need(Need.one(name, "is missing: the file needs item_id, dimension and score (or raw_output)"))
    loop.need(
        Need.any_of(("score", "raw_output"), "is missing: give a `score` column or a `raw_output` column")
    )
    if loop.errors:
        return ParsedJudgeScores(table.format, loop.errors)
    spec = replace(output, scale=scale) if output else OutputSpec(scale=scale)
    check = _RowCheck(loop, set(item_ids), set(dimensions) | {OVERALL}, criteria, spec, rubric_scale)
    rows = loop.each(check)
    if not rows and not loop.errors:
        loop.add(None, None, "The file has no scores.")
    return ParsedJudgeScores(table.format, loop.sorted_by_row_then_column_name(), rows)


class _RowCheck:
    """The rules of one row of judge scores, with what they need of the whole file."""

    def __init__(self, loop, known, allowed, criteria, spec, rubric_scale):
        self.loop, self.known, self.allowed, self.criteria = loop, known, allowed, criteria
        self.spec, self.rubric_scale = spec, rubric_scale
        self.cells = {
            name: [c.strip() for c in loop.text(name)] for name in ("item_id", "dimension", "score", "reason")
        }
        self.raw_outputs = loop.text("raw_output")
        self.seen: dict[tuple[str, str], int] = {}
        # One answer given on the rows of several dimensions of an item was one call scoring them all: it
        # scores only the dimensions it names (a lone {"score": 4} is not a score for each).
        self.sharing: dict[tuple[str, str], set[str]] = {}
        for item_id, dimension, score, raw in zip(
            self.cells["item_id"], self.cells["dimension"], self.cells["score"], self.raw_outputs
        ):
            if not score and raw.strip() and dimension:
                self.sharing.setdefault((item_id, raw), set()).add(dimension.lower())

    def __call__(self, i: int, number: int, problems: list[RowError]) -> JudgeRow:
        error, cells, raw_output = self.loop.error, self.cells, self.raw_outputs[i]
        item_id, score_text = cells["item_id"][i], cells["score"][i]
        if not item_id:
            problems.append(error(number, "item_id", "is empty"))
        elif item_id not in self.known:
            problems.append(error(number, "item_id", f"`{item_id}` is not an item of this batch"))
        criterion, dimension = self.dimension(number, cells["dimension"][i].lower(), problems)
        for what in filter(None, (dimension, criterion)):
            key = (item_id, what if what == dimension else f"criterion:{what}")
            if item_id and key in self.seen:
                message = f"`{item_id}` × `{what}` already appears on {self.loop.unit} {self.seen[key]}"
                problems.append(error(number, "dimension", message))
            self.seen.setdefault(key, number)
        raw_value, reason = self.raw_value(
            number,
            score_text,
            raw_output,
            cells["reason"][i],
            criterion or dimension,
            problems,
            sorted(self.sharing.get((item_id, raw_output), ())),
        )
        value = None
        if raw_value is not None:
            try:
                value = self.spec.scale.to_rubric(raw_value, *self.rubric_scale)
            except JudgeOutputError as exc:
                column = "score" if score_text else "raw_output"
                problems.append(error(number, column, str(exc) + ("" if score_text else _quoted(raw_output))))
        return JudgeRow(number, item_id, dimension, raw_value, value, reason, raw_output, criterion)

    def dimension(self, number: int, dimension: str, problems: list[RowError]) -> tuple[str, str]:
        """The row's (criterion, dimension): a judge's own criterion is mapped through ``criteria``."""
        criterion, allowed = "", self.allowed
        if self.criteria is not None and dimension and dimension not in allowed:
            criterion, dimension = dimension, self.criteria.get(dimension, "")
            if dimension and dimension not in allowed:
                message = f"`{criterion}` maps onto `{dimension}`, not a rubric dimension"
                problems.append(self.loop.error(number, "dimension", message))
        if not dimension and not criterion:
            problems.append(self.loop.error(number, "dimension", "is empty"))
        elif dimension and dimension not in allowed:
            message = f"`{dimension}` is not one of {', '.join(sorted(allowed))}"
            problems.append(self.loop.error(number, "dimension", message))
        return criterion, dimension

    def raw_value(
        self, number, score_text, raw_output, reason, dimension, problems, sharing=()
    ) -> tuple[float | None, str]:
        """The score on the judge's scale (``None`` when unreadable) and the reason, from the row's score
        or else read out of its raw output; ``sharing``: the dimensions of the item's rows giving the same
        raw output, when there are several."""
        if score_text:
            try:
                return read_value(score_text, self.spec, f"`{score_text}`"), reason
            except JudgeOutputError as exc:
                problems.append(self.loop.error(number, "score", str(exc)))
        elif raw_output.strip():
            try:
                if len(sharing) > 1:
                    scores, missing = parse_named_scores(raw_output, sharing, spec=self.spec)
                    if dimension not in scores:
                        raise JudgeOutputError(dict(missing).get(dimension, f"no score for {dimension!r}"))
                    parsed = scores[dimension]
                else:
                    parsed = parse_score(raw_output, dimension=dimension or None, spec=self.spec)
                return parsed.value, reason or parsed.reason
            except JudgeOutputError as exc:
                shared = (
                    f" (this item's rows of {', '.join(sharing)} give the same raw_output, one answer that must "
                    "name each dimension it scores; answers of separate calls go in the `score` column)"
                    if len(sharing) > 1
                    else ""
                )
                message = f"no score could be read: {exc}{shared}{_quoted(raw_output)}"
                problems.append(self.loop.error(number, "raw_output", message))
        else:
            problems.append(
                self.loop.error(number, "score", "is empty and there is no raw_output to read it from")
            )
        return None, reason
