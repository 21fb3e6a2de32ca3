"""The stream page's charts, written as SVG directly (a chart per page view; matplotlib would take most
of the page's time): one line per statistic over the windows, its 95 % interval shaded."""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

from annotator.plots import data_uri

WIDTH, HEIGHT = 720, 260
LEFT, RIGHT, TOP, BOTTOM = 76, 150, 12, 64
COLOURS = ("#2457c5", "#d2691e", "#2e8b57", "#8b3a8b")


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
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
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    n = len(labels)

    def x(i: int) -> float:
        return LEFT + (plot_w * (i + 0.5) / n if n else 0)

    def y(v: float) -> float:
        return TOP + plot_h * (hi - v) / (hi - lo)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="10">',
        f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#bbb"/>',
    ]
    for t in _ticks(lo, hi):
        out.append(
            f'<line x1="{LEFT - 4}" x2="{LEFT + plot_w}" y1="{y(t):.1f}" y2="{y(t):.1f}" stroke="#eee"/>'
        )
        out.append(f'<text x="{LEFT - 6}" y="{y(t) + 3:.1f}" text-anchor="end">{t:g}</text>')
    step = max(1, math.ceil(n / 12))
    for i in range(0, n, step):
        out.append(
            f'<text x="{x(i):.1f}" y="{TOP + plot_h + 12}" text-anchor="end" '
            f'transform="rotate(-30 {x(i):.1f} {TOP + plot_h + 12})">{escape(labels[i])}</text>'
        )
    out.append(
        f'<text x="14" y="{TOP + plot_h / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {TOP + plot_h / 2:.1f})">{escape(ylabel)}</text>'
    )
    out.extend(
        f'<line x1="{x(i):.1f}" x2="{x(i):.1f}" y1="{TOP}" y2="{TOP + plot_h}" stroke="#c0392b" '
        'stroke-dasharray="4 3"><title>alert</title></line>'
        for i in marks
    )
    for k, (name, points) in enumerate(lines.items()):
        colour = COLOURS[k % len(COLOURS)]
        # Runs of windows with an interval: one shaded band each; runs of estimates: one line each.
        band: list[int] = []
        for i in [*range(n), None]:
            if i is not None and points[i][1] is not None and points[i][2] is not None:
                band.append(i)
                continue
            if band:
                upper = " ".join(f"{x(j):.1f},{y(points[j][2]):.1f}" for j in band)
                lower = " ".join(f"{x(j):.1f},{y(points[j][1]):.1f}" for j in reversed(band))
                out.append(f'<polygon points="{upper} {lower}" fill="{colour}" fill-opacity="0.15"/>')
                band = []
        run: list[int] = []
        for i in [*range(n), None]:
            if i is not None and points[i][0] is not None:
                run.append(i)
                continue
            if run:
                path = " ".join(f"{x(j):.1f},{y(points[j][0]):.1f}" for j in run)
                out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
                out.extend(
                    f'<circle cx="{x(j):.1f}" cy="{y(points[j][0]):.1f}" r="2.2" fill="{colour}"/>'
                    for j in run
                )
                run = []
        ly = TOP + 14 + 16 * k
        out.append(
            f'<line x1="{WIDTH - RIGHT + 12}" x2="{WIDTH - RIGHT + 30}" y1="{ly}" y2="{ly}" stroke="{colour}" stroke-width="2"/>'
        )
        out.append(f'<text x="{WIDTH - RIGHT + 36}" y="{ly + 3}">{escape(name)}</text>')
    out.append("</svg>")
    return data_uri("\n".join(out))
