"""Calibration figures: deterministic SVG, counts drawn as text, jitter only around the true points."""

import re

from annotator.charts.judges import JITTER, confusion_svg, data_uri, scatter_svg


def test_scatter_is_deterministic_svg():
    pairs = [(1.0, 1.0), (3.0, 3.0), (3.0, 3.0), (5.0, 4.5)]
    svg = scatter_svg(pairs)
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    assert svg == scatter_svg(pairs)
    assert scatter_svg(pairs, seed=1) != svg  # the jitter comes from the seed
    assert JITTER < 0.5  # jitter never moves a point into the next score's band


def test_confusion_shows_every_count():
    matrix = [[7, 1, 0, 0, 0], [2, 11, 0, 0, 0], [0, 0, 13, 0, 0], [0, 0, 0, 17, 0], [0, 0, 0, 0, 19]]
    svg = confusion_svg(matrix)
    texts = re.findall(r">(\d+)</text>", svg)
    for value in ("7", "11", "13", "17", "19"):
        assert value in texts
    assert data_uri(svg).startswith("data:image/svg+xml;base64,")
