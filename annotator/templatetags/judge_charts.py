"""``{% judge_scatter row %}`` and ``{% judge_confusion row %}``: calibration figures as <img> data URIs.

Drawing is most of the judge section's time, so each figure is kept by its data: the same
numbers (a report viewed again, or by a colleague) give the same figure without redrawing.

Django imports every tag library when its template engine starts, for the rating pages too: numpy
and the figures (``annotator.plots``) are imported by the tags, on the first figure drawn.
"""

from functools import lru_cache

from django import template
from django.utils.html import format_html

from annotator.counted import counted

register = template.Library()


def _key(values) -> tuple:
    import numpy as np

    return (
        tuple(map(tuple, np.asarray(values, dtype=float).reshape(len(values), -1).tolist()))
        if len(values)
        else ()
    )


@lru_cache(maxsize=512)
def _scatter_uri(pairs: tuple) -> str:
    from annotator.plots import data_uri, scatter_svg

    return data_uri(scatter_svg(pairs))


@lru_cache(maxsize=512)
def _confusion_uri(matrix: tuple) -> str:
    import numpy as np

    from annotator.plots import confusion_svg, data_uri

    return data_uri(confusion_svg(np.asarray(matrix, dtype=int)))


@register.simple_tag
def judge_scatter(row):
    alt = f"Scatter of judge scores against the human mean, {counted(row.calibration.n, 'item', 'items')}"
    return format_html(
        '<img class="chart" src="{}" alt="{}">', _scatter_uri(_key(row.calibration.pairs)), alt
    )


@register.simple_tag
def judge_confusion(row):
    alt = "Confusion matrix: rounded human median (rows) against rounded judge score (columns)"
    return format_html(
        '<img class="chart" src="{}" alt="{}">', _confusion_uri(_key(row.calibration.confusion)), alt
    )


@register.filter
def judge_rows(section, name):
    """The rows of one judge in a JudgesSection: ``{{ section|judge_rows:judge.name }}``."""
    return section.for_judge(name)


@register.filter
def judge_ppi(section, name):
    """The PPI++ estimates of one judge in a JudgesSection: ``{{ section|judge_ppi:judge.name }}``."""
    return section.ppi_for(name)


@register.simple_tag
def judge_reliability(reliability):
    from annotator.plots import data_uri, reliability_svg

    alt = f"Reliability diagram of the judge's stated confidence, {reliability.n} verdicts"
    return format_html(
        '<img class="chart" src="{}" alt="{}">', data_uri(reliability_svg(reliability.bins)), alt
    )


@register.simple_tag
def versions_on_set(calibration_set):
    """Spearman ρ per dimension across the judge's versions on the frozen calibration set."""
    from annotator.plots import data_uri, over_time_svg

    labels, series = calibration_set.series()
    svg = over_time_svg(
        labels, series, ylabel="Spearman \u03c1 with people", xlabel="judge version (oldest first)"
    )
    alt = f"Spearman correlation with people per dimension, {counted(len(labels), 'judge version', 'judge versions')} on {counted(calibration_set.n_items, 'item', 'items')}"
    return format_html('<img class="chart wide" src="{}" alt="{}">', data_uri(svg), alt)
