"""The report's quality-control block for the templates: agreement with and without the
excluded annotators side by side, and the annotator signals table, sortable by any column."""

from __future__ import annotations

from typing import Any

from django.utils.safestring import mark_safe

from annotator.plots import over_time_svg
from annotator.reports.selectors.batch_report import BatchReport
from hcs import quality as q

# column key → (heading, value getter); one table definition for the page and the export.
COLUMNS: dict[str, tuple[str, Any]] = {
    "annotator": ("Annotator", lambda s: s.annotator),
    "n": ("Items", lambda s: s.n_annotations),
    "median_seconds": ("Median s", lambda s: s.median_seconds),
    "fast": ("Too fast", lambda s: s.fast_share),
    "straight": ("All equal", lambda s: s.straightlining),
    "run": ("Longest run", lambda s: s.longest_run),
    "loo": ("\u03c1 with consensus", lambda s: s.loo_spearman),
    "gold": ("Gold accuracy (training + checks)", lambda s: s.gold_accuracy),
    "checks": ("Checks passed / failed", lambda s: (s.checks_passed, -s.checks_failed)),
    "edits": ("Edits", lambda s: s.edits),
    "skips": ("Skips", lambda s: s.skips),
}
SIGNAL_OF_COLUMN = {
    "fast": "too fast",
    "straight": "straight-lining",
    "run": "identical run",
    "loo": "low agreement",
    "gold": "gold accuracy",
}


def _sort_key(getter, descending: bool):
    def key(signals):
        value = getter(signals)
        missing = value is None
        return (missing, value if not missing else 0) if not descending else (missing, _neg(value))

    return key


def _neg(value):
    if isinstance(value, str):
        return value  # names sort ascending either way
    if isinstance(value, tuple):
        return tuple(-v for v in value)
    return -value


def kappa_undefined_reason(agreement, k: int, *, without: bool = False) -> str:
    """Why Fleiss' κ is missing, or "" when it is not. κ takes only items with k ratings
    (``hcs.agreement.dimension_agreement``), so leaving one of k raters out can leave it none; with
    items, κ is undefined only when chance agreement is 1 (every rating in one category)."""
    if agreement.fleiss_kappa is not None:
        return ""
    if agreement.fleiss_items_used == 0:
        if without:
            return f"needs k = {k} ratings on an item; without the excluded annotators no item has {k}"
        return f"needs k = {k} ratings on an item; no item has {k} yet"
    return "every rating is in one category, so chance agreement is 1"


def quality_context(report: BatchReport, *, sort: str = "") -> dict[str, Any] | None:
    quality = report.quality
    if quality is None:
        return None
    column = sort.lstrip("-")
    if column not in COLUMNS:
        column, sort = "annotator", "annotator"
    descending = sort.startswith("-")
    rows = sorted(quality.annotators.values(), key=_sort_key(COLUMNS[column][1], descending))
    table = []
    for s in rows:
        by_name = {sig.name: sig for sig in s.signals}
        cells = {key: by_name.get(name) for key, name in SIGNAL_OF_COLUMN.items()}
        table.append({"s": s, "flag": cells})
    headers = [
        {"key": key, "label": label, "sort": ("-" + key) if sort == key else key, "active": column == key}
        for key, (label, _) in COLUMNS.items()
    ]
    side_by_side = [
        {
            "label": kept.label,
            "kept": kept.agreement,
            "all": everyone.agreement,
            "kept_kappa_why": kappa_undefined_reason(kept.agreement, report.k, without=True),
            "all_kappa_why": kappa_undefined_reason(everyone.agreement, report.k),
        }
        for kept, everyone in zip(report.dimensions, quality.dimensions_all)
    ]
    thresholds = [
        f"too fast: more than {q.FAST_SHARE_FLAG:.0%} of items in under {quality.min_seconds:g} s",
        f"all equal: more than {q.STRAIGHT_SHARE_FLAG:.0%} of annotations give every dimension one score",
        f"longest run: {q.STRAIGHT_RUN_FLAG} or more consecutive identical score vectors",
        f"\u03c1 with consensus: Spearman with the others' mean overall HCS below {q.LOO_SPEARMAN_FLAG:g}",
        (
            "gold accuracy: below the batch's warning threshold "
            f"({next((s.threshold for r in rows for s in r.signals if s.name == 'gold accuracy'), q.CHECK_WARN_BELOW):.0%})"
        ),
    ]
    return {
        "section": quality,
        "headers": headers,
        "rows": table,
        "side_by_side": side_by_side,
        "thresholds": thresholds,
        "sort": sort,
        "over_time": _over_time(report),
    }


def _over_time(report: BatchReport) -> dict[str, Any] | None:
    series = report.quality.over_time.every_n if report.quality.over_time is not None else None
    if series is None or len(series.labels) < 2:
        return None  # one window is the report's own agreement: nothing to plot
    labels = {d.key: d.label for d in report.rubric.dimensions}
    kappa = {labels[d]: [w.fleiss_kappa[d] for w in series.windows] for d in labels}
    return {
        "every": report.quality.over_time.every,
        "plot": mark_safe(over_time_svg(series.labels, kappa, ylabel="Fleiss' \u03ba")),  # our own SVG
        "labels": series.labels,
        "drift": sorted(series.drift.items()),
    }
