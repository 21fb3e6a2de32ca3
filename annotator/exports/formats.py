"""The one table of export formats, used by the report page's download links, the background
job and ``export_report``.

Each format names its content type, the file name it downloads as, how it is built and whether
it can be built by the background worker. Formats that need the agreement report take it as
their argument; the annotation and score tables read the batch's rows directly and stream.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.utils.text import slugify

from annotator.exports import report_csv
from annotator.judges.exports.judges_csv import judges_csv
from annotator.exports.report_html import report_html
from annotator.exports.report_json import report_json
from annotator.judges.exports import tables as judge_exports
from annotator.models import Batch
from annotator.selectors.reports import BatchReport, batch_report

CSV_TYPE = "text/csv; charset=utf-8"


@dataclass(frozen=True)
class ExportFormat:
    key: str  # the URL's name for it: reports/<batch>/export/<key>
    content_type: str
    from_report: Callable[[BatchReport], Iterable[str]] | None = None  # built from the agreement report
    from_batch: Callable[..., Iterable[str]] | None = None  # streamed from the batch's rows
    background: bool = False  # large batches build it in the worker (make worker)
    label: str = ""  # the report page's download link
    judges: bool = False  # judge data: linked only when the batch has some

    @property
    def needs_report(self) -> bool:
        return self.from_report is not None

    def filename(self, batch: Batch) -> str:
        return f"{slugify(batch.name) or 'batch'}-{self.key if '.' in self.key else 'report.' + self.key}"


EXPORT_FORMATS: dict[str, ExportFormat] = {
    f.key: f
    for f in (
        ExportFormat("json", "application/json", from_report=lambda r: [report_json(r), "\n"], background=True,
                     label="JSON"),
        ExportFormat("html", "text/html; charset=utf-8", from_report=lambda r: [report_html(r)], background=True,
                     label="HTML (self-contained)"),
        ExportFormat("dimensions.csv", CSV_TYPE, from_report=report_csv.dimensions_csv, label="Agreement table (CSV)"),
        ExportFormat("items.csv", CSV_TYPE, from_report=report_csv.items_csv, label="Overall HCS per item (CSV)"),
        ExportFormat("scores.csv", CSV_TYPE, from_batch=report_csv.scores_csv, label="All scores, long (CSV)"),
        ExportFormat("annotations.csv", CSV_TYPE, from_batch=report_csv.annotations_csv,
                     label="Annotations, template format (CSV)"),
        ExportFormat("judges.csv", CSV_TYPE, from_report=judges_csv, label="LLM judges (CSV)", judges=True),
        ExportFormat("judge_scores.csv", CSV_TYPE, from_batch=judge_exports.judge_scores_csv,
                     label="Judge scores per item (CSV)", judges=True),
        ExportFormat("pairwise_verdicts.csv", CSV_TYPE, from_batch=judge_exports.pairwise_verdicts_csv,
                     label="Pairwise verdicts (CSV)", judges=True),
        # Raw outputs and prompts make it the largest table: large batches build it in the worker.
        ExportFormat("judge_calls.jsonl", "application/x-ndjson; charset=utf-8",
                     from_batch=judge_exports.judge_calls_jsonl, background=True, label="Judge calls (JSON Lines)",
                     judges=True),
    )
}
# export_report --table NAME is the format "NAME.csv" or "NAME.jsonl" (--format csv or jsonl).
TABLES = {key.split(".", 1)[0]: key for key in EXPORT_FORMATS if "." in key}
CSV_TABLES = [name for name, key in TABLES.items() if key.endswith(".csv")]


def export_chunks(fmt: ExportFormat, *, batch: Batch, report: BatchReport | None = None) -> Iterable[str]:
    """The export's text in chunks. ``report`` is built with the default options when not given."""
    if fmt.from_batch is not None:
        return fmt.from_batch(batch=batch)
    return fmt.from_report(report if report is not None else batch_report(batch=batch))
