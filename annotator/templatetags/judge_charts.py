"""``{% judge_scatter row %}`` and ``{% judge_confusion row %}``: calibration figures as <img> data URIs."""

from django import template
from django.utils.html import format_html

from annotator.charts.judges import confusion_svg, data_uri, scatter_svg

register = template.Library()


@register.simple_tag
def judge_scatter(row):
    alt = f"Scatter of judge scores against the human mean, {row.calibration.n} items"
    return format_html('<img class="chart" src="{}" alt="{}">', data_uri(scatter_svg(row.calibration.pairs)), alt)


@register.simple_tag
def judge_confusion(row):
    alt = "Confusion matrix: rounded human median (rows) against rounded judge score (columns)"
    return format_html('<img class="chart" src="{}" alt="{}">', data_uri(confusion_svg(row.calibration.confusion)), alt)
