"""Gold columns of a batch file: the expert's answer for training and check items.

``gold_<dimension>`` (one per rubric dimension), ``gold_flags`` (``;``-separated flag keys or a
JSON list; when the column exists a blank cell means "no flag", and flags are compared), ``gold_tolerance`` (default 1), ``gold_explanation`` and ``gold_kind`` (``training``
or ``check``; default ``check``). A row with any gold score or a kind is a gold item; its scores
and flags are checked with the rubric like an annotation's, and every problem names its row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from annotator.imports.json_text import parse_constraints
from hcs.quality_rules import GOLD_TOLERANCE
from hcs.rubric import Rubric, parse_score

PREFIX = "gold_"
SETTINGS = ("gold_flags", "gold_tolerance", "gold_explanation", "gold_kind")
KINDS = ("training", "check")
DEFAULT_KIND = "check"


@dataclass(frozen=True)
class GoldRow:
    """The gold part of one row (the item's text is in the parsed rows, at ``index``)."""

    index: int  # position among the file's rows
    kind: str
    scores: dict[str, int]
    flags: list[str] | None  # None: the file has no gold_flags column, flags are not checked
    tolerance: int
    explanation: str


def is_gold_column(name: str) -> bool:
    return name.startswith(PREFIX)


def gold_rows(cells: dict[str, list[str]], rows: list[int], rubric: Rubric, error) -> list[GoldRow]:
    """Check the gold columns (``cells``: column → text per row). ``error(row, column, message)``
    records a problem; returns the gold rows (meaningful only when nothing was recorded)."""
    score_columns = {f"{PREFIX}{key}": key for key in rubric.dimension_keys}
    for name in cells:
        if name not in score_columns and name not in SETTINGS:
            dims = ", ".join(score_columns)
            error(None, name, f"is not a gold column: gold scores are {dims}; other gold columns are "
                              + ", ".join(SETTINGS))
    n = len(rows)
    out = []
    for i in range(n):
        row_cells = {name: values[i].strip() for name, values in cells.items()}

        def get(name: str, row_cells=row_cells) -> str:
            return row_cells.get(name, "")

        given_scores = {dim: get(col) for col, dim in score_columns.items() if get(col)}
        kind = get("gold_kind").lower()
        if not given_scores and not kind:
            for name in ("gold_flags", "gold_tolerance", "gold_explanation"):
                if get(name):
                    error(rows[i], name, "is set, but the row has no gold scores (gold_<dimension>)")
            continue
        out.append(_gold_row(rows[i], kind, given_scores, get, score_columns, rubric, error,
                             has_flag_column="gold_flags" in cells, index=i))
    return [g for g in out if g is not None]


def _gold_row(row, kind, given, get, score_columns, rubric: Rubric, error, *, has_flag_column: bool,
              index: int) -> GoldRow | None:
    bad = False
    if kind and kind not in KINDS:
        error(row, "gold_kind", f"`{kind}` is not a gold kind; use training or check")
        bad = True
    scores: dict[str, int] = {}
    for col, dim in score_columns.items():
        if dim not in given:
            error(row, col, "is empty: a gold item needs the expert's score on every dimension")
            bad = True
            continue
        value = parse_score(given[dim])
        if value is None or not rubric.scale_min <= value <= rubric.scale_max:
            error(row, col, f"{given[dim]} is not a whole number {rubric.scale_min}\u2013{rubric.scale_max}")
            bad = True
            continue
        scores[dim] = value
    flags = None
    if has_flag_column:
        try:
            flags = parse_constraints(get("gold_flags"))  # ;-separated or a JSON list of texts, as constraints
        except ValueError as exc:
            error(row, "gold_flags", str(exc))
            return None
    tolerance = GOLD_TOLERANCE
    if get("gold_tolerance"):
        tolerance = parse_score(get("gold_tolerance"))
        span = rubric.scale_max - rubric.scale_min
        if tolerance is None or not 0 <= tolerance <= span:
            error(row, "gold_tolerance", f"{get('gold_tolerance')} is not a whole number 0\u2013{span}")
            return None
    if bad:
        return None
    for message in rubric.validate(scores, flags or []):
        error(row, None, f"gold answer: {message}")
        bad = True
    if bad:
        return None
    return GoldRow(index=index, kind=kind or DEFAULT_KIND, scores=scores, flags=flags, tolerance=tolerance,
                   explanation=get("gold_explanation"))


def gold_summary(gold: list[GoldRow]) -> dict[str, Any]:
    return {kind: sum(1 for g in gold if g.kind == kind) for kind in KINDS}
