"""CSV tables: the per-dimension agreement table, the tidy long scores table, and the
annotations in the ``templates/annotation_template.csv`` format (re-importable)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING

from annotator.models import Batch
from annotator.reports.exports.csv_safe import (
    DELIMITER,
    RECORD_END,
    Echo,
    SafeWriter,
    chunks,
    csv_lines,
)
from annotator.reports.selectors.rows import annotation_records
from annotator.reports.statistics import csv_cells, csv_columns
from annotator.uploads.files.annotation_template import (
    EXCLUDED,
    format_constraints_met,
    template_columns,
)

if TYPE_CHECKING:  # the agreement report (numpy, scipy) is needed by its two tables only, as an argument
    from annotator.reports.selectors.batch_report import BatchReport

# The agreement statistics' columns come from their table (annotator.reports.statistics).
DIMENSION_COLUMNS = ["dimension", "label", *csv_columns()]
ITEMS_COLUMNS = ["item_id", "system_id", "n_annotations", "overall_hcs_mean", "overall_hcs_sd"]
SCORES_COLUMNS = [
    "item_id",
    "system_id",
    "annotator",
    "dimension",
    "score",
    "overall_hcs",
    "submitted_at",
    EXCLUDED,
]

COMPARISONS_COLUMNS = [
    "system_a",
    "system_b",
    "dimension",
    "mean_difference",
    "ci95_low",
    "ci95_high",
    "n_prompts",
    "ppi_estimate",
    "ppi_ci95_low",
    "ppi_ci95_high",
    "ppi_judge",
    "ppi_sample",
    "ppi_n_prompts_labelled",
    "ppi_withheld_because",
]

# true/false: read as logical by pandas (read_csv) and R (read.csv) alike.
EXCLUDED_CELL = {False: "false", True: "true"}


def dimensions_csv(report: BatchReport) -> Iterator[str]:
    rows = [[row.key, row.label, *csv_cells(row.agreement)] for row in report.dimensions]
    return csv_lines(DIMENSION_COLUMNS, rows)


def items_csv(report: BatchReport) -> Iterator[str]:
    """Per item: annotations with every dimension rated, mean overall HCS and its spread (SD)."""
    return csv_lines(ITEMS_COLUMNS, report.items.rows() if report.items else [])


def comparisons_csv(report: BatchReport) -> Iterator[str]:
    """Per pair of systems × dimension: the paired difference B − A and its PPI++ version (the report's
    ``comparisons`` section; only the header when the report was built without its sections)."""
    section = report.sections.get("comparisons")
    rows = [
        [
            c.system_a,
            c.system_b,
            c.dimension,
            c.mean_difference,
            *c.ci95,
            c.n_prompts,
            c.ppi.estimate,
            *c.ppi.ci95,
            c.ppi.judge,
            c.ppi.sample,
            c.ppi.n_labelled,
            c.ppi.withheld_because,
        ]
        for c in (section.comparisons if section is not None else ())
    ]
    return csv_lines(COMPARISONS_COLUMNS, rows)


def scores_csv(*, batch: Batch) -> Iterator[str]:
    """One row per score: loads unchanged in pandas (``pd.read_csv``) and R (``read.csv``).

    An annotation's cells other than dimension and score are written once for all its rows, and
    the dimension, score and overall cells once per distinct set of scores."""
    rubric = batch.rubric_obj
    dims = rubric.dimension_keys
    writer = SafeWriter(Echo())  # type: ignore[arg-type]
    dimension_cells = [writer.cells([d]) for d in dims]

    @lru_cache(maxsize=1_024)
    def per_score(scores: tuple[int | None, ...]) -> tuple[list[str], str]:
        """(the dimension and score cells of each rated dimension, the overall score's cell)"""
        rated = [
            dim + DELIMITER + writer.cells([s]) for dim, s in zip(dimension_cells, scores) if s is not None
        ]
        return rated, writer.cells([rubric.overall(dict(zip(dims, scores)))])

    @lru_cache(maxsize=1_024)
    def submitted(when: datetime) -> str:
        return writer.cells([when.isoformat()])

    def records() -> Iterator[str]:
        for a in annotation_records(batch=batch):
            rated, overall = per_score(a.scores)
            if rated:
                head = writer.cells([a.item_id, a.system_id, a.annotator]) + DELIMITER
                tail = (
                    DELIMITER
                    + overall
                    + DELIMITER
                    + submitted(a.submitted_at)
                    + DELIMITER
                    + EXCLUDED_CELL[a.excluded]
                    + RECORD_END
                )
                yield "".join([head + cells + tail for cells in rated])

    return chunks(writer.writerow(SCORES_COLUMNS), records())


def annotations_csv(*, batch: Batch) -> Iterator[str]:
    """The annotations in the annotation template's columns and ``excluded``, ready for
    ``import_annotations`` (which ignores ``excluded``).

    The score and flag cells are written once per distinct set of scores and flags, the
    constraint answers and comment once per distinct pair."""
    rubric = batch.rubric_obj
    columns = [*template_columns(rubric), EXCLUDED]
    flag_columns = [c for c in columns if c in rubric.flag_keys]
    writer = SafeWriter(Echo())  # type: ignore[arg-type]

    @lru_cache(maxsize=1_024)
    def scores_and_flags(scores: tuple[int | None, ...], flags: tuple[str, ...]) -> str:
        return writer.cells([*scores, *(1 if f in flags else 0 for f in flag_columns)])

    @lru_cache(maxsize=1_024)
    def constraints_and_comment(met: tuple[bool, ...], comment: str) -> str:  # most comments are empty
        return writer.cells([format_constraints_met(met), comment])

    def records() -> Iterator[str]:
        for a in annotation_records(batch=batch, with_text=True):
            yield (
                writer.cells([a.item_id, a.system_id, a.prompt, a.response, a.annotator])
                + DELIMITER
                + scores_and_flags(a.scores, a.flags)
                + DELIMITER
                + constraints_and_comment(a.constraints_met, a.comment)
                + DELIMITER
                + EXCLUDED_CELL[a.excluded]
                + RECORD_END
            )

    return chunks(writer.writerow(columns), records())
