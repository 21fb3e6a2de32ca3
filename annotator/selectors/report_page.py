"""The report page in two parts: the agreement report at once, the LLM-judge sections on request.

The judges' calibration (bootstrap intervals, the alt-test and two plots per judge and dimension)
costs several times the rest of the page, so the page asks for it after it is shown. Each part is
built once per request; the exports (JSON, HTML) still build everything in one go.
"""

from __future__ import annotations

from typing import Any

from annotator.models import Batch, JudgeFailure, JudgeScore, PairwiseVerdict
from annotator.selectors import quality_report
from annotator.selectors.reports import (
    BatchReport,
    batch_report,
    report_arrays,
    sections_from_arrays,
)


def report_without_judges(*, batch: Batch) -> BatchReport:
    """Agreement, systems, annotators, quality control and disagreements, without the judge sections."""
    return batch_report(batch=batch, with_sections=False)


def batch_has_judges(*, batch: Batch) -> bool:
    return (
        JudgeScore.objects.filter(item__batch=batch).exists()
        or JudgeFailure.objects.filter(item__batch=batch).exists()
        or PairwiseVerdict.objects.filter(baseline__batch=batch).exists()
    )


def judge_sections(*, batch: Batch) -> dict[str, Any]:
    """The report's further sections (``REPORT_SECTIONS``: today the judges'), by name, as ``batch_report``
    builds them (without the excluded annotators, like the rest of the report)."""
    arrays = quality_report.quality_inputs(batch=batch, arrays=report_arrays(batch=batch)).kept_arrays
    return sections_from_arrays(batch=batch, arrays=arrays)
