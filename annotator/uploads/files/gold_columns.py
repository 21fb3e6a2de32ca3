"""Gold columns of a batch file: the expert's answer for training and check items.

``gold_<dimension>`` (one per rubric dimension), ``gold_flags`` (``;``-separated flag keys or a
JSON list; when the column exists a blank cell means "no flag", and flags are compared), ``gold_tolerance`` (default 1), ``gold_explanation`` and ``gold_kind`` (``training``
or ``check``; default ``check``), ``gold_constraints_met`` (the expert's checklist answers,
``met;not_met`` in the order of the item's constraints). A row with any gold score or a kind is a
gold item; its scores and flags are checked with the rubric like an annotation's, and every
problem names its row.

On an item with hard constraints the checklist, not the annotator, sets the constraint flags,
so gold constraint flags the checklist cannot produce (or that disagree with
``gold_constraints_met``) would fail every careful annotator: such a row is refused.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from annotator.uploads.files.annotation_template import (
    format_constraints_met,
    parse_constraints_met,
)
from annotator.uploads.files.json_text import parse_constraints
from hcs.checklist import CHECKLIST_FLAGS, checklist_flags, checklist_outcomes
from hcs.quality_rules import GOLD_TOLERANCE
from hcs.rubric import Rubric, parse_score

PREFIX = "gold_"
MET = "gold_constraints_met"
SETTINGS = ("gold_flags", "gold_tolerance", "gold_explanation", "gold_kind", MET)
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


def gold_marks(cells: dict[str, list[str]], n: int, rubric: Rubric) -> dict[int, str]:
    """The rows that are gold items (any gold score or a kind given), by position, with their kind as
    written (the default when blank). A gold row with a bad cell is still a gold row, not an item to
    rate, so the preview counts it among the gold items."""
    score_columns = [f"{PREFIX}{key}" for key in rubric.dimension_keys if f"{PREFIX}{key}" in cells]
    kinds = cells.get("gold_kind", [""] * n)
    marked = {}
    for i in range(n):
        kind = kinds[i].strip().lower()
        if kind or any(cells[col][i].strip() for col in score_columns):
            marked[i] = kind or DEFAULT_KIND
    return marked


def gold_rows(
    cells: dict[str, list[str]],
    rows: list[int],
    rubric: Rubric,
    error,
    n_constraints: list[int] | None = None,
) -> list[GoldRow]:
    """Check the gold columns (``cells``: column → text per row; ``n_constraints``: the hard
    constraints of each row's item). ``error(row, column, message)`` records a problem; returns
    the gold rows (meaningful only when nothing was recorded)."""
    score_columns = {f"{PREFIX}{key}": key for key in rubric.dimension_keys}
    for name in cells:
        if name not in score_columns and name not in SETTINGS:
            dims = ", ".join(score_columns)
            error(
                None,
                name,
                f"is not a gold column: gold scores are {dims}; other gold columns are "
                + ", ".join(SETTINGS),
            )
    n = len(rows)
    marked = gold_marks(cells, n, rubric)
    out = []
    for i in range(n):
        row_cells = {name: values[i].strip() for name, values in cells.items()}

        def get(name: str, row_cells=row_cells) -> str:
            return row_cells.get(name, "")

        given_scores = {dim: get(col) for col, dim in score_columns.items() if get(col)}
        kind = get("gold_kind").lower()
        if i not in marked:
            for name in ("gold_flags", "gold_tolerance", "gold_explanation", MET):
                if get(name):
                    error(rows[i], name, "is set, but the row has no gold scores (gold_<dimension>)")
            continue
        gold = _gold_row(
            rows[i],
            kind,
            given_scores,
            get,
            score_columns,
            rubric,
            error,
            has_flag_column="gold_flags" in cells,
            index=i,
        )
        if gold is not None and not _reachable(
            rows[i], gold.flags, get(MET), n_constraints[i] if n_constraints else 0, rubric, error
        ):
            gold = None
        out.append(gold)
    return [g for g in out if g is not None]


def _gold_row(
    row, kind, given, get, score_columns, rubric: Rubric, error, *, has_flag_column: bool, index: int
) -> GoldRow | None:
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
            flags = parse_constraints(
                get("gold_flags")
            )  # ;-separated or a JSON list of texts, as constraints
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
    # Each problem names its column: the flags' own (an unknown or exclusive flag) gold_flags, a score
    # that a flag caps that score's gold_<dimension>.
    flag_problems = rubric.validate({}, flags or [], require_all=False)
    for message in flag_problems:
        error(row, "gold_flags", f"gold answer: {message}")
    bad = bool(flag_problems)
    for col, dim in score_columns.items():
        for message in rubric.validate({dim: scores[dim]}, flags or [], require_all=False):
            if message not in flag_problems:
                error(row, col, f"gold answer: {message}")
                bad = True
    if bad:
        return None
    return GoldRow(
        index=index,
        kind=kind or DEFAULT_KIND,
        scores=scores,
        flags=flags,
        tolerance=tolerance,
        explanation=get("gold_explanation"),
    )


def _names(flags) -> str:
    return " and ".join(f"`{f}`" for f in sorted(flags)) or "no constraint flag"


def _reachable(row, flags: list[str] | None, met_cell: str, n: int, rubric: Rubric, error) -> bool:
    """Whether the checklist of an item with ``n`` hard constraints can give the gold constraint
    flags (and, with ``gold_constraints_met``, gives exactly them); records the problem if not."""
    available = CHECKLIST_FLAGS & set(rubric.flag_keys)
    if met_cell:
        try:  # `met;not_met`, or the same words as a JSON list (a JSONL file)
            met = parse_constraints_met(";".join(parse_constraints(met_cell)) or " ")
        except ValueError:
            met = None
        if met is None:
            error(row, MET, f"`{met_cell}` is not a list of met / not_met answers separated by `;`")
            return False
        if len(met) != n:
            error(
                row,
                MET,
                f"gives {len(met)} answer{'s' if len(met) != 1 else ''}, but the item has {n} hard "
                f"constraint{'s' if n != 1 else ''}: give one met / not_met per constraint, in order",
            )
            return False
        implied = checklist_flags(met, available)
        if flags is not None and set(flags) & available != implied:
            error(
                row,
                "gold_flags",
                f"has {_names(set(flags) & available)}, but the checklist answers "
                f"`{format_constraints_met(met)}` (gold_constraints_met) set {_names(implied)}: an annotator who "
                "answers the checklist as the expert did cannot match; change gold_flags or gold_constraints_met",
            )
            return False
        return True
    if flags is None or not n:
        return True  # flags not compared, or no checklist: the annotator ticks every flag
    outcomes = checklist_outcomes(n, available)
    if frozenset(set(flags) & available) not in outcomes:
        choices = " or ".join(_names(o) for o in outcomes)
        error(
            row,
            "gold_flags",
            f"has {_names(set(flags) & available)}, which the checklist of an item with {n} hard "
            f"constraint{'s' if n != 1 else ''} cannot set (it sets {choices}): no annotator can match; "
            "fix gold_flags (gold_constraints_met can say which constraints the expert found met)",
        )
        return False
    return True


def gold_summary(kinds: Iterable[str]) -> dict[str, int]:
    """Gold rows per kind: training and check always, and any kind the file misspelled."""
    counts = dict.fromkeys(KINDS, 0)
    for kind in kinds:
        counts[kind] = counts.get(kind, 0) + 1
    return counts
