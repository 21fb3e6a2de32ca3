"""The report's further sections, in one table: ``REPORT_SECTIONS``.

A feature joins the report by one line here: the section's name (its key in ``BatchReport.sections``
and in the JSON export), the function that builds it and, optionally, the function that reads what a
stored report of the section depends on (``revision``: facts about the batch's rows that change with
every write the section reads; ``annotator.reports.selectors.stored.report_revision`` digests them). Both
are given by dotted path so that the core report does not import the feature's package. A builder takes
:class:`SectionInputs` and returns an object with a ``template`` (the report page and the HTML export
include it) and ``to_json()`` (the JSON export). A builder also sees the sections built before it
(``SectionInputs.sections``), so a later section can follow what an earlier one decided (the paired
comparisons read the judges' verdict on whether the labelled set is a random sample).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from django.utils.module_loading import import_string

from annotator.models import Batch
from annotator.reports.selectors.arrays import ReportArrays


@dataclass(frozen=True, eq=False)
class SectionInputs:
    batch: Batch
    arrays: ReportArrays  # without the excluded annotators, like the rest of the report
    epsilon: float  # the alt-test margin
    n_resamples: int  # bootstrap resamples
    seed: int
    # The sections built before this one, by name, in the table's order.
    sections: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ReportSection:
    name: str
    builder: str | Callable[[SectionInputs], Any]  # a dotted path, imported on first use, or the function
    # What the section reads beyond the core report's rows: ``revision(batch)`` returns JSON-able facts.
    revision: str | Callable[[Batch], Any] | None = None
    # Whether the batch has rows for the section, ``present(batch)``: the report page asks for the
    # sections, and links the exports marked ``judges``, only when one has. None: always.
    present: str | Callable[[Batch], bool] | None = None
    # Whether the section shows judge data: only such a section's presence links the exports marked ``judges``.
    judges: bool = True

    def build(self, inputs: SectionInputs) -> Any:
        return entry_function(self.builder)(inputs)

    def revision_facts(self, batch: Batch) -> Any:
        return None if self.revision is None else entry_function(self.revision)(batch)

    def present_in(self, batch: Batch) -> bool:
        return True if self.present is None else entry_function(self.present)(batch)


def entry_function(path_or_function):
    """A registry entry's function: imported from its dotted path on first use, or given as is."""
    return import_string(path_or_function) if isinstance(path_or_function, str) else path_or_function


REPORT_SECTIONS: dict[str, ReportSection] = {
    s.name: s
    for s in (
        # The judges package: calibration per judge × dimension, then pairwise verdicts against people.
        ReportSection(
            "judges",
            "annotator.judges.selectors.judges.judges_section",
            revision="annotator.judges.selectors.revision.judges_revision",
            present="annotator.judges.selectors.presence.batch_has_judge_scores",
        ),
        ReportSection(
            "judge_pairwise",
            "annotator.judges.selectors.judges.pairwise_section",
            revision="annotator.judges.selectors.revision.pairwise_revision",
            present="annotator.judges.selectors.presence.batch_has_verdicts",
        ),
        # Paired differences between systems answering the same prompts, with PPI++ from the judges'
        # scores; after "judges", whose verdict on the labelled sample it follows.
        ReportSection(
            "comparisons",
            "annotator.reports.selectors.comparisons.comparisons_section",
            revision="annotator.reports.selectors.comparisons.comparisons_revision",
            present="annotator.reports.selectors.comparisons.batch_has_systems_to_compare",
            judges=False,
        ),
    )
}


def batch_has_sections(*, batch: Batch, judges_only: bool = False) -> bool:
    """Whether any section of ``REPORT_SECTIONS`` (with ``judges_only``, any judge section) has rows in
    ``batch`` (checked in the table's order)."""
    return any(
        section.present_in(batch) for section in REPORT_SECTIONS.values() if section.judges or not judges_only
    )


def report_sections(inputs: SectionInputs) -> dict[str, Any]:
    """Every section of ``REPORT_SECTIONS``, by name, in the table's order, each built with the ones before it."""
    built: dict[str, Any] = {}
    for name, section in REPORT_SECTIONS.items():
        built[name] = section.build(replace(inputs, sections=dict(built)))
    return built
