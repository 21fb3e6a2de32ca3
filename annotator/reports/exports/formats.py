"""The one table of export formats, used by the report page's download links, the background
job and ``export_report``.

Each row is an :class:`~annotator.reports.exports.export_format.ExportFormat`. A feature declares its rows in
one list of its own and the table includes that list by name: the judges package's is
``annotator.judges.exports.formats.JUDGE_EXPORT_FORMATS``.
"""

from __future__ import annotations

from collections.abc import Iterable

from annotator.judges.exports.formats import JUDGE_EXPORT_FORMATS
from annotator.models import Batch
from annotator.reports.exports import csv_tables as report_csv
from annotator.reports.exports.export_format import CSV_TYPE, ExportFormat
from annotator.reports.exports.html_export import report_html
from annotator.reports.exports.json_export import report_json
from annotator.reports.selectors.batch_report import BatchReport, batch_report

__all__ = [
    "CSV_TABLES",
    "CSV_TYPE",
    "EXPORT_FORMATS",
    "TABLES",
    "ExportFormat",
    "export_bytes",
    "export_chunks",
]


def _hf_zip(*, batch: Batch, report: BatchReport | None = None) -> bytes:
    # pyarrow is loaded by the one export that writes parquet, not by every import of this table.
    from annotator.reports.hf.writer import dataset_zip

    return dataset_zip(batch=batch, report=report)


EXPORT_FORMATS: dict[str, ExportFormat] = {
    f.key: f
    for f in (
        ExportFormat(
            "json",
            "application/json",
            from_report=lambda r: [report_json(r), "\n"],
            background=True,
            label="JSON",
        ),
        ExportFormat(
            "html",
            "text/html; charset=utf-8",
            from_report=lambda r: [report_html(r)],
            background=True,
            label="HTML (self-contained)",
        ),
        ExportFormat(
            "dimensions.csv", CSV_TYPE, from_report=report_csv.dimensions_csv, label="Agreement table (CSV)"
        ),
        ExportFormat(
            "items.csv", CSV_TYPE, from_report=report_csv.items_csv, label="Overall HCS per item (CSV)"
        ),
        ExportFormat(
            "comparisons.csv",
            CSV_TYPE,
            from_report=report_csv.comparisons_csv,
            background=True,
            label="Systems compared, paired by prompt (CSV)",
        ),
        ExportFormat(
            "scores.csv", CSV_TYPE, from_batch=report_csv.scores_csv, label="All scores, long (CSV)"
        ),
        ExportFormat(
            "annotations.csv",
            CSV_TYPE,
            from_batch=report_csv.annotations_csv,
            label="Annotations, template format (CSV)",
        ),
        *JUDGE_EXPORT_FORMATS,
        # export_report --format hf --out DIR writes the folder itself (annotator.reports.hf.writer).
        ExportFormat(
            "hf",
            "application/zip",
            zipped=_hf_zip,
            background=True,
            download_name="hf-dataset.zip",
            label="Hugging Face dataset (zip)",
        ),
    )
}
# export_report --table NAME is the format "NAME.csv" or "NAME.jsonl" (--format csv or jsonl).
TABLES = {key.split(".", 1)[0]: key for key in EXPORT_FORMATS if "." in key}
CSV_TABLES = [name for name, key in TABLES.items() if key.endswith(".csv")]


def export_chunks(fmt: ExportFormat, *, batch: Batch, report: BatchReport | None = None) -> Iterable[str]:
    """The export's text in chunks. ``report`` is built with the default options when not given."""
    if fmt.zipped is not None:
        raise ValueError(f"export format {fmt.key!r} is a zip of files: use export_bytes")
    if fmt.from_batch is not None:
        return fmt.from_batch(batch=batch)
    return fmt.from_report(report if report is not None else batch_report(batch=batch))


def export_bytes(fmt: ExportFormat, *, batch: Batch, report: BatchReport | None = None) -> bytes:
    """The whole export as bytes (the background job's output, a zipped folder's download)."""
    if fmt.zipped is not None:
        return fmt.zipped(batch=batch, report=report)
    return "".join(export_chunks(fmt, batch=batch, report=report)).encode("utf-8")
