"""The stream page's charts: one line per statistic over the windows, its 95 % interval shaded."""

from __future__ import annotations

import math

from annotator.plots import _figure, _plain, _style, _svg, data_uri


def series_svg(labels: list[str], lines: dict[str, list[tuple]], *, ylabel: str) -> str:
    """``lines``: name → per window (estimate, low, high), any of them None (a gap)."""
    fig = _figure(6.8, 2.8)
    with _style():
        ax = fig.add_subplot()
        x = list(range(len(labels)))

        def nan(v):
            return math.nan if v is None else v

        for name, points in lines.items():
            ax.plot(
                x, [nan(p[0]) for p in points], marker="o", markersize=3, linewidth=1.2, label=_plain(name)
            )
            ax.fill_between(x, [nan(p[1]) for p in points], [nan(p[2]) for p in points], alpha=0.15)
        step = max(1, len(labels) // 12)
        ax.set_xticks(x[::step], [_plain(v) for v in labels[::step]], fontsize=7, rotation=30, ha="right")
        ax.set_ylabel(_plain(ylabel), fontsize=8)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=7, frameon=False, loc="center left", bbox_to_anchor=(1.0, 0.5))
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    return data_uri(_svg(fig))
