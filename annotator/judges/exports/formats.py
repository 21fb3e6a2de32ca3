"""The judges package's rows of the export-format table, in the order the report page links them;
``annotator.reports.exports.formats.EXPORT_FORMATS`` includes them by name."""

from __future__ import annotations

from annotator.judges.exports import tables
from annotator.judges.exports.judges_csv import judges_csv
from annotator.reports.exports.export_format import CSV_TYPE, ExportFormat

JUDGE_EXPORT_FORMATS: tuple[ExportFormat, ...] = (
    ExportFormat("judges.csv", CSV_TYPE, from_report=judges_csv, label="LLM judges (CSV)", judges=True),
    ExportFormat(
        "judge_scores.csv",
        CSV_TYPE,
        from_batch=tables.judge_scores_csv,
        label="Judge scores per item (CSV)",
        judges=True,
    ),
    ExportFormat(
        "pairwise_verdicts.csv",
        CSV_TYPE,
        from_batch=tables.pairwise_verdicts_csv,
        label="Pairwise verdicts (CSV)",
        judges=True,
    ),
    # Raw outputs and prompts make it the largest table: large batches build it in the worker.
    ExportFormat(
        "judge_calls.jsonl",
        "application/x-ndjson; charset=utf-8",
        from_batch=tables.judge_calls_jsonl,
        background=True,
        label="Judge calls (JSON Lines)",
        judges=True,
    ),
)
