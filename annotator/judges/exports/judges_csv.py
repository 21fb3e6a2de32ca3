"""The judge calibration table as CSV: one row per judge × dimension (formula-defused)."""

from __future__ import annotations

from collections.abc import Iterator

from annotator.reports.exports.csv_safe import csv_lines
from annotator.reports.selectors.batch_report import BatchReport

JUDGE_COLUMNS = [
    "judge",
    "dimension",
    "n",
    "spearman",
    "spearman_ci95_low",
    "spearman_ci95_high",
    "kendall",
    "kendall_ci95_low",
    "kendall_ci95_high",
    "pearson",
    "mae",
    "bias",
    "qwk",
    "human_ceiling_spearman",
    "human_ceiling_kendall",
    "alpha_humans",
    "alpha_humans_plus_judge",
    "possibly_inverted",
    "alt_test_winning_rate",
    "alt_test_advantage_probability",
    "alt_test_passed",
    "alt_test_epsilon",
    "alt_test_annotators_tested",
    "raw_scales",
]


def judges_csv(report: BatchReport) -> Iterator[str]:
    section = report.sections.get("judges")
    rows = []
    # The section's rows, not its JSON: a pairwise judge's JSON entry holds only its position probe.
    for row in section.rows if section is not None else ():
        d = row.to_json()
        if "alt_test" not in d:
            continue  # an entry with no calibration of its own: PPI++ on a derived overall
        alt = d["alt_test"]
        rows.append(
            [
                row.judge,
                row.dimension,
                d["n"],
                d["spearman"],
                *d["spearman_ci95"],
                d["kendall"],
                *d["kendall_ci95"],
                d["pearson"],
                d["mae"],
                d["bias"],
                d["qwk"],
                d["human_ceiling_spearman"],
                d["human_ceiling_kendall"],
                d["alpha_humans"],
                d["alpha_humans_plus_judge"],
                d["possibly_inverted"],
                alt["winning_rate"],
                alt["advantage_probability"],
                alt["passed"],
                alt["epsilon"],
                alt["annotators_tested"],
                "; ".join(d["raw_scales"]),
            ]
        )
    return csv_lines(JUDGE_COLUMNS, rows)
