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
from annotator.exports.judges_csv import judges_csv
from annotator.exports.report_html import report_html
from annotator.exports.report_json import report_json
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
    # A folder of files (the Hugging Face dataset), handed out as one zip: built whole, never streamed;
    # it builds the report it needs itself.
    zipped: Callable[..., bytes] | None = None
    download_name: str = ""  # the file name's tail when it is not "report.<key>"

    @property
    def needs_report(self) -> bool:
        return self.from_report is not None

    def filename(self, batch: Batch) -> str:
        tail = self.download_name or (self.key if "." in self.key else "report." + self.key)
        return f"{slugify(batch.name) or 'batch'}-{tail}"


def _hf_zip(*, batch: Batch, report: BatchReport | None = None) -> bytes:
    # pyarrow is loaded by the one export that writes parquet, not by every import of this table.
    from annotator.exports.hf.writer import dataset_zip

    return dataset_zip(batch=batch, report=report)


EXPORT_FORMATS: dict[str, ExportFormat] = {
    f.key: f
    for f in (
        ExportFormat("json", "application/json", from_report=lambda r: [report_json(r), "\n"], background=True),
        ExportFormat("html", "text/html; charset=utf-8", from_report=lambda r: [report_html(r)], background=True),
        ExportFormat("dimensions.csv", CSV_TYPE, from_report=report_csv.dimensions_csv),
        ExportFormat("items.csv", CSV_TYPE, from_report=report_csv.items_csv),
        ExportFormat("judges.csv", CSV_TYPE, from_report=judges_csv),
        ExportFormat("scores.csv", CSV_TYPE, from_batch=report_csv.scores_csv),
        ExportFormat("annotations.csv", CSV_TYPE, from_batch=report_csv.annotations_csv),
        # export_report --format hf --out DIR writes the folder itself (annotator.exports.hf.writer).
        ExportFormat("hf", "application/zip", zipped=_hf_zip, background=True, download_name="hf-dataset.zip"),
    )
}
# export_report --format csv --table NAME is the format "NAME.csv".
CSV_TABLES = [key.removesuffix(".csv") for key in EXPORT_FORMATS if key.endswith(".csv")]


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
