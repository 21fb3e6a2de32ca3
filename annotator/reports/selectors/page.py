"""The report page in two parts: the agreement report at once, the LLM-judge sections on request.

The judges' calibration (bootstrap intervals, the alt-test and two plots per judge and dimension)
costs several times the rest of the page, so the page asks for it after it is shown. Each part is
stored for the batch's revision once computed (:mod:`annotator.reports.selectors.stored`).
"""

from __future__ import annotations

from typing import Any

from annotator.models import Batch
from annotator.quality.selectors import report_section as quality_report
from annotator.reports.selectors.batch_report import (
    BatchReport,
    batch_report,
    report_arrays,
    sections_from_arrays,
)
from hcs.defaults import DEFAULT_EPSILON, DEFAULT_RESAMPLES, DEFAULT_SEED


def report_without_judges(*, batch: Batch) -> BatchReport:
    """Agreement, systems, annotators, quality control and disagreements, without the judge sections."""
    return batch_report(batch=batch, with_sections=False)


def judge_sections(*, batch: Batch) -> dict[str, Any]:
    """The report's further sections (``REPORT_SECTIONS``: today the judges'), by name, as ``batch_report``
    builds them (without the excluded annotators, like the rest of the report)."""
    from annotator.reports.selectors.stored import options_key
    from annotator.reports.services.storing import report_through_cache

    def compute() -> dict[str, Any]:
        arrays = quality_report.quality_inputs(batch=batch, arrays=report_arrays(batch=batch)).kept_arrays
        return sections_from_arrays(batch=batch, arrays=arrays)

    options = {"n_resamples": DEFAULT_RESAMPLES, "seed": DEFAULT_SEED, "epsilon": float(DEFAULT_EPSILON)}
    # The whole report (an export's, or the background job's) holds the same sections.
    whole = tuple(
        options_key("report", **options, sections=True, over_time=over_time) for over_time in (True, False)
    )
    return report_through_cache(
        batch=batch,
        key=options_key("judge_sections", **options),
        also=whole,
        pick=lambda report: report.sections,
        compute=compute,
    )


def report_page_context(*, batch: Batch, sort: str = "") -> dict[str, Any]:
    """The report page's context (figures drawn), stored for the batch's revision and ``sort``."""
    from annotator.reports.exports.html_export import report_context
    from annotator.reports.selectors.stored import options_key
    from annotator.reports.services.storing import report_through_cache

    return report_through_cache(
        batch=batch,
        key=options_key("page", sort=sort),
        compute=lambda: report_context(report_without_judges(batch=batch), sort=sort),
    )


def judge_sections_html(*, batch: Batch) -> str:
    """The judge sections' HTML fragment (figures drawn), stored for the batch's revision: it holds
    no form and nothing of the person who asks, so every researcher is served the same text."""
    from django.template.loader import render_to_string

    from annotator.reports.selectors.stored import options_key
    from annotator.reports.services.storing import report_through_cache

    def compute() -> str:
        # The sections link to each judge's card by the report's batch id, as on the whole page.
        return render_to_string(
            "annotator/_report_judge_sections.html",
            {"sections": judge_sections(batch=batch), "links": True, "report": {"batch_id": batch.pk}},
        )

    return report_through_cache(batch=batch, key=options_key("judge_sections_html"), compute=compute)


def report_page_ready(*, batch: Batch, sort: str = "") -> bool:
    """Whether the page's context, or a whole report it can be drawn from, is stored for the batch's
    current revision."""
    from annotator.models import ReportCache
    from annotator.reports.selectors.stored import options_key, report_revision

    options = {"n_resamples": DEFAULT_RESAMPLES, "seed": DEFAULT_SEED, "epsilon": float(DEFAULT_EPSILON)}
    keys = [options_key("page", sort=sort)] + [
        options_key("report", **options, sections=sections, over_time=True) for sections in (True, False)
    ]
    return ReportCache.objects.filter(
        batch=batch, revision=report_revision(batch=batch), options__in=keys
    ).exists()
