"""The methods paragraph of a batch report: items, annotators, k, the exclusion policy and agreement per
dimension with its 95% intervals, written to be pasted into a paper. One function; the report page, the
JSON export (``methods``) and the judge card all call it."""

from __future__ import annotations

from annotator.counted import counted
from annotator.quality.services.exclusion import BLOCK_RULE, RESEARCHER
from annotator.reports.selectors.batch_report import BatchReport
from annotator.reports.statistics import methods_clauses, methods_figures


def _excluded(report: BatchReport) -> list:
    """The exclusions of people who rated in the batch (an account excluded before rating left nothing out)."""
    rated = {a.annotator for a in report.annotators}
    return [
        e for e in (report.quality.exclusions if report.quality is not None else ()) if e.annotator in rated
    ]


def _exclusion_policy(excluded: list, outliers: int) -> str:
    """Who was left out of the statistics and by what rule."""
    kept = (
        f" ({outliers} flagged as possible outlier{'s' if outliers != 1 else ''} and kept)"
        if outliers
        else ""
    )
    if not excluded:
        return "No annotator was excluded" + kept
    by_rule = sum(e.rule == BLOCK_RULE for e in excluded)
    by_hand = sum(e.rule == RESEARCHER for e in excluded)
    other = len(excluded) - by_rule - by_hand
    how = [
        part
        for part in (
            f"{by_hand} by a researcher's decision" if by_hand else "",
            f"{by_rule} by the batch's gold-check block rule" if by_rule else "",
            f"{other} by another rule" if other else "",
        )
        if part
    ]
    return (
        f"{counted(len(excluded), 'further annotator', 'further annotators')} {'was' if len(excluded) == 1 else 'were'} excluded "
        f"({', '.join(how)}) and left out of every statistic below" + kept
    )


def _value(value: float | None, ci) -> str:
    if value is None:
        return "undefined"
    if ci is None or ci[0] is None or ci[1] is None:
        return f"{value:.2f}"
    return f"{value:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]"


def _order(report: BatchReport) -> str:
    """In what order items were handed out: what makes the labelled items a random sample, or not."""
    if report.order_seed is None:
        return "Items were handed out in the order of the uploaded file."
    return (
        "Items were handed out in a random order (seed "
        f"{report.order_seed}: an item's place is the first 31 bits of BLAKE2b of the seed and its id)."
    )


def methods_paragraph(report: BatchReport) -> str:
    excluded = _excluded(report)
    left_out_names = {e.annotator for e in excluded}
    kept = [a for a in report.annotators if a.annotator not in left_out_names]  # the table lists everyone
    annotators = len(kept)
    outliers = sum(a.outlier for a in kept)
    left_out = max((row.agreement.fleiss_items_left_out for row in report.dimensions), default=0)
    per_dimension = "; ".join(
        f"{row.label}: {methods_figures(row.agreement, _value)}" for row in report.dimensions
    )
    rubric = report.rubric
    if report.n_annotations == 0:
        return (
            f"No item of this batch ({counted(report.n_items, 'item', 'items')}, k = {report.k} annotations planned per item) has been "
            "rated yet: there is no agreement to report."
        )
    fewer = (
        f"up to {left_out} item{'s' if left_out != 1 else ''} with fewer ratings left out"
        if left_out
        else "every rated item had at least k"
    )
    return (
        f"{annotators} annotator{'s' if annotators != 1 else ''} rated {report.n_items_rated} of {report.n_items} "
        f"items ({report.n_annotations} annotations) on the {len(rubric.dimensions)}-dimension {rubric.title} "
        f"rubric (version {rubric.version}, scale {rubric.scale_min}–{rubric.scale_max}), with k = {report.k} "
        f"independent annotations planned per item. {_order(report)} "
        f"{methods_clauses(fewer)}. {_exclusion_policy(excluded, outliers)}"
        + ". 95% confidence intervals are percentile bootstrap intervals over items "
        f"({report.n_resamples} resamples, seed {report.seed}). "
        f"Agreement per dimension: {per_dimension}."
    )
