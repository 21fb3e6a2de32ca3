"""CSV tables: the per-dimension agreement table, the tidy long scores table, and the
annotations in the ``templates/annotation_template.csv`` format (re-importable)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from annotator.exports.csv_safe import csv_lines
from annotator.models import Batch
from annotator.selectors.report_rows import annotation_rows, score_rows

if TYPE_CHECKING:  # the agreement report (numpy, scipy) is needed by its two tables only, as an argument
    from annotator.selectors.reports import BatchReport

DIMENSION_COLUMNS = [
    "dimension", "label",
    "fleiss_kappa", "fleiss_kappa_ci95_low", "fleiss_kappa_ci95_high", "fleiss_kappa_label",
    "fleiss_items_used", "fleiss_items_left_out",
    "krippendorff_alpha_ordinal", "krippendorff_alpha_ordinal_ci95_low", "krippendorff_alpha_ordinal_ci95_high",
    "krippendorff_alpha_interval", "krippendorff_alpha_interval_ci95_low", "krippendorff_alpha_interval_ci95_high",
    "gwet_ac2", "gwet_ac2_ci95_low", "gwet_ac2_ci95_high",
    "percent_agreement", "percent_agreement_within_1", "n_items", "n_items_pairable", "n_ratings",
]
ITEMS_COLUMNS = ["item_id", "system_id", "n_annotations", "overall_hcs_mean", "overall_hcs_sd"]
SCORES_COLUMNS = ["item_id", "system_id", "annotator", "dimension", "score", "overall_hcs", "submitted_at"]


def _lo_hi(ci):
    return (None, None) if ci is None else ci


def dimensions_csv(report: BatchReport) -> Iterator[str]:
    rows = []
    for row in report.dimensions:
        a = row.agreement
        rows.append([
            row.key, row.label,
            a.fleiss_kappa, *_lo_hi(a.fleiss_kappa_ci95), a.fleiss_label, a.fleiss_items_used, a.fleiss_items_left_out,
            a.alpha_ordinal, *_lo_hi(a.alpha_ordinal_ci95),
            a.alpha_interval, *_lo_hi(a.alpha_interval_ci95),
            a.gwet_ac2, *_lo_hi(a.gwet_ac2_ci95),
            a.percent_agreement, a.percent_within_one, a.n_items, a.n_items_pairable, a.n_ratings,
        ])
    return csv_lines(DIMENSION_COLUMNS, rows)


def items_csv(report: BatchReport) -> Iterator[str]:
    """Per item: annotations with every dimension rated, mean overall HCS and its spread (SD)."""
    return csv_lines(ITEMS_COLUMNS, report.items.rows() if report.items else [])


def scores_csv(*, batch: Batch) -> Iterator[str]:
    """One row per score: loads unchanged in pandas (``pd.read_csv``) and R (``read.csv``)."""
    rows = score_rows(annotation_rows(batch=batch), batch.rubric_obj.dimension_keys)
    return csv_lines(SCORES_COLUMNS, ([*row[:-1], row[-1].isoformat()] for row in rows))


def annotations_csv(*, batch: Batch) -> Iterator[str]:
    """The annotations in the annotation template's columns, ready for ``import_annotations``."""
    # Imported here: the file parser pulls in pandas, which a worker serving only rating pages
    # (this module is reachable from the job status page) never needs.
    from annotator.imports.annotation_file import (
        format_constraints_met,
        template_columns,
    )

    rubric = batch.rubric_obj
    columns = template_columns(rubric)
    flag_columns = [c for c in columns if c in rubric.flag_keys]

    def rows() -> Iterator[list[Any]]:
        for a in annotation_rows(batch=batch, with_text=True):
            flags = set(a["flags"])
            yield [
                a["item_id"], a["system_id"], a["prompt"], a["response"], a["annotator"],
                *(a["scores"][d] for d in rubric.dimension_keys),
                *(1 if f in flags else 0 for f in flag_columns),
                format_constraints_met(a["constraints_met"]),
                a["comment"],
            ]

    return csv_lines(columns, rows())
