"""Calibration figures: deterministic SVG, counts drawn as text, jitter only around the true points."""

import re

from annotator.plots import JITTER, confusion_svg, data_uri, scatter_svg


def test_scatter_is_deterministic_svg():
    pairs = [(1.0, 1.0), (3.0, 3.0), (3.0, 3.0), (5.0, 4.5)]
    svg = scatter_svg(pairs)
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
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


def test_drawing_leaves_the_global_matplotlib_settings_alone():
    import matplotlib

    from annotator.plots import distribution_svg

    before = dict(matplotlib.rcParams)
    distribution_svg("C", [1, 2], [1, 1])
    scatter_svg([(1.0, 2.0)])
    confusion_svg([[1, 0], [0, 1]], scale=(1, 2))
    assert dict(matplotlib.rcParams) == before
    for key in ("svg.fonttype", "svg.hashsalt"):  # importing the module changed nothing either
        assert matplotlib.rcParams[key] == matplotlib.rcParamsDefault[key]
