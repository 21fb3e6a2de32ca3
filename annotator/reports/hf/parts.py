"""What a feature adds to the Hugging Face dataset, in two tables: ``HF_PARTS`` (configs after
``ratings`` and ``items``) and ``HF_CARD_SECTIONS`` (sections of the card after its agreement table).

A feature joins the dataset by one line in each: the functions are given by dotted path, so the core's
writer and card do not import the feature's package, and the feature keeps its columns next to the
rows they describe (one definition for its CSV export and its parquet config).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from annotator.models import Batch
from annotator.reports.selectors.sections import entry_function

if TYPE_CHECKING:
    import pyarrow as pa

    from annotator.reports.selectors.batch_report import BatchReport


class PartTable(NamedTuple):
    """A config's parquet table: its schema and its rows, as tuples in the schema's column order."""

    schema: pa.Schema
    rows: list[tuple]


@dataclass(frozen=True)
class DatasetPart:
    config: str  # the config's name: data/<config>/train.parquet and the card's YAML
    content: str  # the card's "Configs" table: what a row holds
    table: str | Callable[[Batch], PartTable]  # a dotted path, imported on first use, or the function

    def table_of(self, batch: Batch) -> PartTable:
        return entry_function(self.table)(batch)


@dataclass(frozen=True)
class CardSection:
    heading: str  # the card's "## heading"
    lines: str | Callable[[BatchReport], list[str]]  # the section's Markdown lines, from the card's report

    def lines_of(self, report: BatchReport) -> list[str]:
        return entry_function(self.lines)(report)


HF_PARTS: dict[str, DatasetPart] = {
    p.config: p
    for p in (
        # The judges package: every judge score, then every pairwise verdict (a config only when it has rows).
        DatasetPart(
            "judge_scores",
            "one row per LLM-judge score: the judge, its version, raw and rescaled value, reason and call",
            "annotator.judges.exports.hf.judge_scores_table",
        ),
        DatasetPart(
            "pairwise_verdicts",
            "one row per pairwise LLM-judge verdict, with the order the pair was sent in and the judge's "
            "criterion scores",
            "annotator.judges.exports.hf.pairwise_verdicts_table",
        ),
    )
}

HF_CARD_SECTIONS: tuple[CardSection, ...] = (
    # The judges package: each judge's calibration against the people, from the report's judge section.
    CardSection("LLM judge calibration", "annotator.judges.exports.hf.judge_calibration_lines"),
)
