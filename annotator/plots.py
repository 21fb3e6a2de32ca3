"""Every figure the app draws, rendered server-side as SVG text (matplotlib, but for the judge figures).

- ``distribution_svg``: how often each score was given (report pages and the HTML export, inline).
- ``scatter_svg``, ``confusion_svg`` and ``reliability_svg``: a judge against people (report pages, as
  ``<img>`` data URIs); the first two are written as SVG directly, without matplotlib.
- ``over_time_svg``: agreement per window of submissions (the quality section of the report).
- ``series_svg``: a stream's statistics per window with their 95 % intervals and the windows its alerts
  start in (the stream page; written as SVG directly: a chart per page view, where matplotlib would take
  most of the page's time).

All share one style, applied per figure with ``matplotlib.rc_context`` (global ``rcParams`` are
never changed): text stays text (``svg.fonttype = none``) and a fixed hash salt gives stable element
ids, so the same data always gives the same SVG. Figures are ``Figure`` objects, not pyplot's global
state, so nothing leaks between requests or threads. matplotlib escapes text for XML; labels are
also stripped of ``$`` so a rubric label can never switch on mathtext.
"""

from __future__ import annotations

import base64
import io
import math
import re
from collections.abc import Sequence
from functools import cache
from html import escape as html_escape
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from matplotlib.figure import Figure

STYLE = {"svg.fonttype": "none", "svg.hashsalt": "hcs-report"}
JITTER = 0.12  # scatter jitter, below half a score so a point never leaves its band

_PROLOG = re.compile(r"^.*?(?=<svg)", re.DOTALL)
_METADATA = re.compile(r"\s*<metadata>.*?</metadata>", re.DOTALL)


@cache
def _matplotlib():
    """matplotlib and its Figure class, imported on the first figure: a worker that serves only
    the rating pages never loads matplotlib, which is large."""
    import matplotlib
    from matplotlib.figure import Figure

    return matplotlib, Figure


def _style():
    return _matplotlib()[0].rc_context(STYLE)


def _figure(width: float, height: float, dpi: float = 72) -> Figure:
    with _style():
        return _matplotlib()[1](figsize=(width, height), dpi=dpi)


def _svg(fig: Figure, *, tight: bool = False) -> str:
    """The figure as an ``<svg>`` element: no XML prolog, no metadata (so it can be inlined too)."""
    buffer = io.StringIO()
    with _style():
        if tight:
            fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
        else:
            fig.tight_layout()
            fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    svg = _PROLOG.sub("", buffer.getvalue(), count=1)
    return _METADATA.sub("", svg, count=1).strip()


def data_uri(svg: str) -> str:
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")


def _plain(label: str) -> str:
    return label.replace("$", r"\$")


def distribution_svg(
    title: str, levels: Sequence[int], counts: Sequence[int], *, mean: float | None = None
) -> str:
    """A bar chart of how often each score was given, as an ``<svg>`` element (no XML prolog)."""
    total = sum(counts) or 1
    fig = _figure(3.4, 2.3)
    with _style():
        ax = fig.add_subplot()
        bars = ax.bar([str(v) for v in levels], [c / total * 100 for c in counts], color="#2457c5")
        # Bars are labelled in the axis's unit (percent); the count of ratings is in the axis title.
        for bar, c in zip(bars, counts):
            ax.annotate(
                f"{c / total * 100:.0f}%",
                (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                ha="center",
                va="bottom",
                fontsize=8,
                xytext=(0, 1),
                textcoords="offset points",
            )
        ax.set_title(_plain(title), fontsize=10)
        n = sum(counts)
        ax.set_xlabel(
            f"score · n = {n} rating{'s' if n != 1 else ''}"
            + ("" if mean is None else f" · mean {mean:.2f}"),
            fontsize=8,
        )
        ax.set_ylabel("% of ratings", fontsize=8)
        ax.set_ylim(
            0, max(100 / len(levels) * 1.2, max(c / total * 100 for c in counts) * 1.18 if counts else 1)
        )
        ax.tick_params(labelsize=8)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    return _svg(fig)


# The judge section draws two figures per judge and dimension; matplotlib took ~0.1 s for each, so
# these two are written as SVG directly (~1 ms), in the same look.
_FONT = 'font-family="DejaVu Sans, Arial, sans-serif"'
# matplotlib's "Blues" colormap: ColorBrewer's nine stops, evenly spaced and linearly interpolated.
_BLUES = (
    (0xF7, 0xFB, 0xFF),
    (0xDE, 0xEB, 0xF7),
    (0xC6, 0xDB, 0xEF),
    (0x9E, 0xCA, 0xE1),
    (0x6B, 0xAE, 0xD6),
    (0x42, 0x92, 0xC6),
    (0x21, 0x71, 0xB5),
    (0x08, 0x51, 0x9C),
    (0x08, 0x30, 0x6B),
)


def _blue(share: float) -> str:
    """The "Blues" colour at ``share`` in [0, 1], as ``#rrggbb``."""
    at = min(max(share, 0.0), 1.0) * (len(_BLUES) - 1)
    i = min(int(at), len(_BLUES) - 2)
    f = at - i
    return "#" + "".join(f"{round(a + (b - a) * f):02x}" for a, b in zip(_BLUES[i], _BLUES[i + 1]))


def _text(x: float, y: float, text: str, *, size: float = 10, anchor: str = "middle", extra: str = "") -> str:
    from xml.sax.saxutils import escape

    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" {_FONT}{extra}>'
        f"{escape(text)}</text>"
    )


def _axis_titles(left: float, top: float, side: float, x_title: str, y_title: str) -> list[str]:
    """A square plot's axis titles, the vertical one turned, and the end of the picture."""
    turned = f' transform="rotate(-90 16 {top + side / 2:.1f})"'
    return [
        _text(left + side / 2, top + side + 36, x_title),
        _text(16, top + side / 2, y_title, extra=turned),
        "</svg>",
    ]


def scatter_svg(pairs, *, scale: tuple[int, int] = (1, 5), seed: int = 0) -> str:
    """``pairs`` = (human mean, judge score) per item; both axes jittered so tied points stay visible."""
    lo, hi = scale
    data = np.asarray(pairs, dtype=float).reshape(-1, 2)
    rng = np.random.default_rng(seed)
    jitter = rng.uniform(-JITTER, JITTER, size=data.shape)
    left, top, side = 62.0, 10.0, 268.0  # one square plot area: the axes share a scale
    low, span = lo - 0.4, (hi - lo) + 0.8

    def x(v: float) -> float:
        return left + (v - low) / span * side

    def y(v: float) -> float:
        return top + side - (v - low) / span * side

    parts = [
        '<svg xmlns="http://www.w3.org/2000/svg" width="360" height="340" viewBox="0 0 360 340">',
        f'<rect x="{left}" y="{top}" width="{side}" height="{side}" fill="white" stroke="black" '
        'stroke-width="0.8"/>',
    ]
    for tick in range(lo, hi + 1):
        grid = 'stroke="#b0b0b0" stroke-opacity="0.25" stroke-width="0.8"'
        parts.append(f'<line x1="{x(tick):.1f}" y1="{top}" x2="{x(tick):.1f}" y2="{top + side}" {grid}/>')
        parts.append(f'<line x1="{left}" y1="{y(tick):.1f}" x2="{left + side}" y2="{y(tick):.1f}" {grid}/>')
        parts.append(_text(x(tick), top + side + 16, str(tick)))
        parts.append(_text(left - 6, y(tick) + 3.5, str(tick), anchor="end"))
    parts.append(
        f'<line x1="{x(lo):.1f}" y1="{y(lo):.1f}" x2="{x(hi):.1f}" y2="{y(hi):.1f}" '
        'stroke="#999999" '
        'stroke-width="1" stroke-dasharray="3.7,1.6"/>'
    )
    for (h, j), (dh, dj) in zip(data, jitter):
        parts.append(
            f'<circle cx="{x(h + dh):.2f}" cy="{y(j + dj):.2f}" r="2" fill="#1f5fa8" fill-opacity="0.55"/>'
        )
    parts.append(
        f'<line x1="{left + 8}" y1="{top + 12}" x2="{left + 28}" y2="{top + 12}" stroke="#999999" '
        'stroke-width="1" stroke-dasharray="3.7,1.6"/>'
    )
    parts.append(_text(left + 34, top + 15, "judge = people", size=9, anchor="start"))
    parts += _axis_titles(left, top, side, "human mean", "judge (mapped onto the rubric scale)")
    return "\n".join(parts)


def confusion_svg(matrix, *, scale: tuple[int, int] = (1, 5)) -> str:
    """Rows: rounded human median; columns: rounded judge score; each cell shows its count."""
    lo, hi = scale
    counts = np.asarray(matrix, dtype=int)
    labels = list(range(lo, hi + 1))
    n = len(labels)
    top_count = max(1, int(counts.max())) if counts.size else 1
    left, top, side = 62.0, 10.0, 250.0
    cell = side / n
    parts = ['<svg xmlns="http://www.w3.org/2000/svg" width="340" height="320" viewBox="0 0 340 320">']
    for i in range(counts.shape[0]):
        for j in range(counts.shape[1]):
            value = int(counts[i, j])
            cx, cy = left + j * cell, top + i * cell
            parts.append(
                f'<rect x="{cx:.1f}" y="{cy:.1f}" width="{cell:.1f}" height="{cell:.1f}" '
                f'fill="{_blue(value / top_count)}"/>'
            )
            dark = value > counts.max() / 2
            parts.append(
                _text(
                    cx + cell / 2,
                    cy + cell / 2 + 3.5,
                    str(value),
                    size=8,
                    extra=f' fill="{"white" if dark else "black"}"',
                )
            )
    parts.append(
        f'<rect x="{left}" y="{top}" width="{side}" height="{side}" fill="none" stroke="black" '
        'stroke-width="0.8"/>'
    )
    for k, label in enumerate(labels):
        parts.append(_text(left + (k + 0.5) * cell, top + side + 16, str(label)))
        parts.append(_text(left - 6, top + (k + 0.5) * cell + 3.5, str(label), anchor="end"))
    parts += _axis_titles(left, top, side, "judge (rounded)", "human median (rounded)")
    return "\n".join(parts)


def over_time_svg(
    labels: list[str],
    series: dict[str, list[float | None]],
    *,
    ylabel: str,
    xlabel: str = "window of submissions",
) -> str:
    """Agreement over time, one line per dimension. ``series``: dimension label → one value per
    window of submissions, or per judge version (None = undefined, a gap in the line)."""
    fig = _figure(6.4, 2.8)
    ax = fig.add_subplot()
    x = list(range(len(labels)))
    for name, values in series.items():
        ax.plot(
            x,
            [float("nan") if v is None else v for v in values],
            marker="o",
            markersize=3,
            linewidth=1.2,
            label=_plain(name),
        )
    ax.set_xticks(x, [_plain(label) for label in labels], fontsize=7, rotation=30, ha="right")
    ax.set_ylabel(_plain(ylabel), fontsize=8)
    ax.set_xlabel(_plain(xlabel), fontsize=8)
    ax.axhline(0, color="#999", linewidth=0.6)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=7, frameon=False, loc="center left", bbox_to_anchor=(1.0, 0.5))
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return _svg(fig)


def reliability_svg(bins) -> str:
    """Reliability diagram: per confidence bin, the share of verdicts that were right (bars) against the
    diagonal of perfect calibration; ``bins`` are ``hcs.calibration.confidence.ReliabilityBin``."""
    fig = _figure(3.6, 3.4)
    with _style():
        ax = fig.add_subplot()
        ax.plot([0, 1], [0, 1], color="#999999", linewidth=1, linestyle="--", label="perfect calibration")
        filled = [b for b in bins if b.n]
        ax.bar(
            [(b.lo + b.hi) / 2 for b in filled],
            [b.accuracy for b in filled],
            width=[b.hi - b.lo for b in filled],
            color="#1f5fa8",
            alpha=0.6,
            edgecolor="white",
            label="share right",
        )
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_xlabel("stated confidence")
        ax.set_ylabel("share of verdicts matching people")
        ax.grid(alpha=0.25)
        ax.legend(loc="upper left", fontsize=7, frameon=False)
    return _svg(fig, tight=True)


# The stream page's charts (series_svg).
_SERIES_WIDTH, _SERIES_HEIGHT = 720, 260
_SERIES_LEFT, _SERIES_RIGHT, _SERIES_TOP, _SERIES_BOTTOM = 76, 150, 12, 64
_SERIES_COLOURS = ("#2457c5", "#d2691e", "#2e8b57", "#8b3a8b")


def _series_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    raw = (hi - lo) / n
    step = 10 ** math.floor(math.log10(raw))
    step *= next(m for m in (1, 2, 2.5, 5, 10) if raw <= step * m)
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step + 1e-9) + 1)]


def series_svg(
    labels: list[str], lines: dict[str, list[tuple]], *, ylabel: str, marks: Sequence[int] = ()
) -> str:
    """``lines``: name → per window (estimate, low, high), any of them None (a gap); ``marks``: windows
    an alert's change began in, drawn as dashed lines. A data URI."""
    values = [v for points in lines.values() for p in points for v in p if v is not None]
    lo, hi = (min(values), max(values)) if values else (0.0, 1.0)
    if hi - lo < 1e-9:
        lo, hi = lo - 0.5, hi + 0.5
    pad = (hi - lo) * 0.05
    lo, hi = lo - pad, hi + pad
    plot_w, plot_h = (
        _SERIES_WIDTH - _SERIES_LEFT - _SERIES_RIGHT,
        _SERIES_HEIGHT - _SERIES_TOP - _SERIES_BOTTOM,
    )
    n = len(labels)

    def x(i: int) -> float:
        return _SERIES_LEFT + (plot_w * (i + 0.5) / n if n else 0)

    def y(v: float) -> float:
        return _SERIES_TOP + plot_h * (hi - v) / (hi - lo)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_SERIES_WIDTH}" height="{_SERIES_HEIGHT}" '
        f'viewBox="0 0 {_SERIES_WIDTH} {_SERIES_HEIGHT}" font-family="sans-serif" font-size="10">',
        f'<rect x="{_SERIES_LEFT}" y="{_SERIES_TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#bbb"/>',
    ]
    for t in _series_ticks(lo, hi):
        out.append(
            f'<line x1="{_SERIES_LEFT - 4}" x2="{_SERIES_LEFT + plot_w}" y1="{y(t):.1f}" y2="{y(t):.1f}" stroke="#eee"/>'
        )
        out.append(f'<text x="{_SERIES_LEFT - 6}" y="{y(t) + 3:.1f}" text-anchor="end">{t:g}</text>')
    step = max(1, math.ceil(n / 12))
    for i in range(0, n, step):
        out.append(
            f'<text x="{x(i):.1f}" y="{_SERIES_TOP + plot_h + 12}" text-anchor="end" '
            f'transform="rotate(-30 {x(i):.1f} {_SERIES_TOP + plot_h + 12})">{html_escape(labels[i])}</text>'
        )
    out.append(
        f'<text x="14" y="{_SERIES_TOP + plot_h / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {_SERIES_TOP + plot_h / 2:.1f})">{html_escape(ylabel)}</text>'
    )
    out.extend(
        f'<line x1="{x(i):.1f}" x2="{x(i):.1f}" y1="{_SERIES_TOP}" y2="{_SERIES_TOP + plot_h}" stroke="#c0392b" '
        'stroke-dasharray="4 3"><title>alert</title></line>'
        for i in marks
    )
    for k, (name, points) in enumerate(lines.items()):
        colour = _SERIES_COLOURS[k % len(_SERIES_COLOURS)]
        # Runs of windows with an interval: one shaded band each; runs of estimates: one line each.
        for band in _runs([p[1] is not None and p[2] is not None for p in points]):
            upper = " ".join(f"{x(j):.1f},{y(points[j][2]):.1f}" for j in band)
            lower = " ".join(f"{x(j):.1f},{y(points[j][1]):.1f}" for j in reversed(band))
            out.append(f'<polygon points="{upper} {lower}" fill="{colour}" fill-opacity="0.15"/>')
        for run in _runs([p[0] is not None for p in points]):
            path = " ".join(f"{x(j):.1f},{y(points[j][0]):.1f}" for j in run)
            out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
            out.extend(
                f'<circle cx="{x(j):.1f}" cy="{y(points[j][0]):.1f}" r="2.2" fill="{colour}"/>' for j in run
            )
        ly = _SERIES_TOP + 14 + 16 * k
        out.append(
            f'<line x1="{_SERIES_WIDTH - _SERIES_RIGHT + 12}" x2="{_SERIES_WIDTH - _SERIES_RIGHT + 30}" y1="{ly}" y2="{ly}" stroke="{colour}" stroke-width="2"/>'
        )
        out.append(f'<text x="{_SERIES_WIDTH - _SERIES_RIGHT + 36}" y="{ly + 3}">{html_escape(name)}</text>')
    out.append("</svg>")
    return data_uri("\n".join(out))


def _runs(present: list[bool]) -> list[list[int]]:
    """The runs of consecutive indices where ``present`` holds: a gap ends a line or a band.

    >>> _runs([True, True, False, True])
    [[0, 1], [3]]
    """
    runs: list[list[int]] = []
    for i, here in enumerate(present):
        if here and runs and runs[-1][-1] == i - 1:
            runs[-1].append(i)
        elif here:
            runs.append([i])
    return runs
