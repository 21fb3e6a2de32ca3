"""The report as HTML: the page and the self-contained export share one body template.

The export inlines the CSS and the SVG plots, so it makes no request to anything and can
be emailed. Everything textual (item ids, system ids, annotator names, rubric labels) goes
through Django's autoescaping; only our own generated SVG and CSS are marked safe.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.staticfiles import finders
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.safestring import mark_safe

from annotator.plots import distribution_svg
from annotator.quality.report_block import quality_context
from annotator.reports.exports.methods import methods_paragraph
from annotator.reports.selectors.batch_report import BatchReport
from annotator.reports.statistics import page_cells, page_columns
from hcs.quality_rules import MIN_SHARED_ITEMS

CSS_FILES = ("css/app.css", "css/report.css")


def report_context(report: BatchReport, *, links: bool = True, sort: str = "") -> dict[str, Any]:
    """What the report templates need, with plots drawn and per-dimension values in rubric order."""
    levels = report.categories
    dims = report.rubric.dimensions
    plots = []
    for row in report.dimensions:
        counts = row.agreement.distribution
        total = sum(counts)
        mean = sum(v * c for v, c in zip(levels, counts)) / total if total else None
        plots.append(
            {"label": row.label, "svg": mark_safe(distribution_svg(row.label, levels, counts, mean=mean))}
        )
    annotators = [
        {
            "quality": a,
            "bias": [a.bias.get(d.key) for d in dims],
            "mean_overall": a.mean.get("overall"),
            "bias_overall": a.bias.get("overall"),
            "rho_overall": a.spearman_loo.get("overall"),
            "n_shared": a.n_shared.get("overall", 0),
        }
        for a in report.annotators
    ]
    disagreements = [
        {"dimension": row, "items": report.disagreements_for(row.key)} for row in report.dimensions
    ]
    return {
        "report": report,
        "agreement_columns": page_columns(),
        "agreement_rows": [
            {"label": row.label, "cells": page_cells(row.agreement)} for row in report.dimensions
        ],
        "plots": plots,
        "annotators": annotators,
        "dimension_abbreviations": [d.abbreviation or d.label for d in dims],
        "min_shared": MIN_SHARED_ITEMS,
        "disagreements": disagreements,
        "methods": methods_paragraph(report),
        "links": links,
        "qc": quality_context(report, sort=sort),
    }


def inline_css() -> str:
    parts = []
    for name in CSS_FILES:
        path = finders.find(name)
        if path:
            parts.append(Path(path).read_text(encoding="utf-8"))
    return "\n".join(parts).replace("</", "<\\/")


def report_html(report: BatchReport) -> str:
    """One self-contained HTML file of the report."""
    context = report_context(report, links=False)
    context.update(css=mark_safe(inline_css()), generated_at=timezone.now())
    return render_to_string("annotator/report_export.html", context)
