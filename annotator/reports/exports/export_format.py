"""One row of the export-format table (``annotator.reports.exports.formats.EXPORT_FORMATS``): what a feature
declares to add an export.

It names the content type, the file name it downloads as, how it is built and whether it can be built by
the background worker. Formats that need the agreement report take it as their argument; tables read
from the batch's rows take the batch and stream.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.utils.text import slugify

if TYPE_CHECKING:
    from annotator.models import Batch
    from annotator.reports.selectors.batch_report import BatchReport

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
