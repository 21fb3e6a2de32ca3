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


def test_scatter_is_well_formed_with_one_point_per_pair_inside_its_band():
    import xml.etree.ElementTree as ET

    pairs = [(1.0, 1.0), (2.0, 5.0), (4.5, 3.0), (5.0, 5.0)]
    root = ET.fromstring(scatter_svg(pairs))
    ns = "{http://www.w3.org/2000/svg}"
    points = [(float(c.get("cx")), float(c.get("cy"))) for c in root.iter(f"{ns}circle")]
    assert len(points) == len(pairs)
    # plot area 62..330 px for 0.6..5.4: one score is 268 / 4.8 px, so jitter stays under half of it
    per_score = 268 / 4.8
    for (h, j), (cx, cy) in zip(pairs, points):
        assert abs((cx - 62) / per_score + 0.6 - h) <= JITTER + 1e-6
        assert abs((10 + 268 - cy) / per_score + 0.6 - j) <= JITTER + 1e-6


def test_confusion_cells_darken_with_their_count_like_matplotlib_blues():
    import xml.etree.ElementTree as ET

    import matplotlib
    from matplotlib.colors import to_hex

    matrix = [[0, 3], [6, 12]]
    root = ET.fromstring(confusion_svg(matrix, scale=(1, 2)))
    fills = [r.get("fill") for r in root.iter("{http://www.w3.org/2000/svg}rect") if r.get("fill") != "none"]
    blues = matplotlib.colormaps["Blues"]
    expected = [to_hex(blues(v / 12)) for v in (0, 3, 6, 12)]
    # within one step of 255 per channel: the colormap is sampled on 256 entries, the SVG interpolates
    for got, want in zip(fills, expected):
        assert all(abs(int(got[k : k + 2], 16) - int(want[k : k + 2], 16)) <= 2 for k in (1, 3, 5)), (
            got,
            want,
        )
    texts = [t for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert [t.text for t in texts[:4]] == ["0", "3", "6", "12"]
    assert texts[3].get("fill") == "white" and texts[0].get("fill") == "black"
