"""The methods paragraph of a batch report: items, annotators, k, the exclusion policy and agreement per
dimension with its 95% intervals, written to be pasted into a paper. One function; the report page, the
JSON export (``methods``) and the judge card all call it."""

from __future__ import annotations

from annotator.selectors.reports import BatchReport


def _value(value: float | None, ci) -> str:
    if value is None:
        return "undefined"
    if ci is None or ci[0] is None or ci[1] is None:
        return f"{value:.2f}"
    return f"{value:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]"


def methods_paragraph(report: BatchReport) -> str:
    annotators = len(report.annotators)
    outliers = sum(a.outlier for a in report.annotators)
    left_out = max((row.agreement.fleiss_items_left_out for row in report.dimensions), default=0)
    per_dimension = "; ".join(
        f"{row.label}: κ = {_value(row.agreement.fleiss_kappa, row.agreement.fleiss_kappa_ci95)}, "
        f"α = {_value(row.agreement.alpha_ordinal, row.agreement.alpha_ordinal_ci95)}"
        for row in report.dimensions
    )
    rubric = report.rubric
    return (
        f"{annotators} annotator{'s' if annotators != 1 else ''} rated {report.n_items_rated} of {report.n_items} "
        f"items ({report.n_annotations} annotations) on the {len(rubric.dimensions)}-dimension {rubric.title} "
        f"rubric (version {rubric.version}, scale {rubric.scale_min}–{rubric.scale_max}), with k = {report.k} "
        "independent annotations planned per item. "
        f"Fleiss' κ was computed on the items with at least k ratings, using the first k by submission time "
        f"(up to {left_out} item{'s' if left_out != 1 else ''} with fewer ratings left out); Krippendorff's α "
        "(ordinal) used every rating. No annotator was excluded"
        + (f" ({outliers} flagged as possible outlier{'s' if outliers != 1 else ''} and kept)" if outliers else "")
        + ". 95% confidence intervals are percentile bootstrap intervals over items "
        f"({report.n_resamples} resamples, seed {report.seed}). "
        f"Agreement per dimension: {per_dimension}."
    )
