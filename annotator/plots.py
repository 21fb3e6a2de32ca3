"""Every figure the app draws, rendered server-side with matplotlib as SVG text.

- ``distribution_svg``: how often each score was given (report pages and the HTML export, inline).
- ``scatter_svg``, ``confusion_svg`` and ``reliability_svg``: a judge against people (report pages, as
  ``<img>`` data URIs).
- ``over_time_svg``: agreement per window of submissions (the quality section of the report).

All share one style, applied per figure with ``matplotlib.rc_context`` (global ``rcParams`` are
never changed): text stays text (``svg.fonttype = none``) and a fixed hash salt gives stable element
ids, so the same data always gives the same SVG. Figures are ``Figure`` objects, not pyplot's global
state, so nothing leaks between requests or threads. matplotlib escapes text for XML; labels are
also stripped of ``$`` so a rubric label can never switch on mathtext.
"""

from __future__ import annotations

import base64
import io
import re
from collections.abc import Sequence
from functools import cache
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


def distribution_svg(title: str, levels: Sequence[int], counts: Sequence[int], *, mean: float | None = None) -> str:
    """A bar chart of how often each score was given, as an ``<svg>`` element (no XML prolog)."""
    total = sum(counts) or 1
    fig = _figure(3.4, 2.3)
    with _style():
        ax = fig.add_subplot()
        bars = ax.bar([str(v) for v in levels], [c / total * 100 for c in counts], color="#2457c5")
        # Bars are labelled in the axis's unit (percent); the count of ratings is in the axis title.
        for bar, c in zip(bars, counts):
            ax.annotate(f"{c / total * 100:.0f}%", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                        ha="center", va="bottom", fontsize=8, xytext=(0, 1), textcoords="offset points")
        ax.set_title(_plain(title), fontsize=10)
        n = sum(counts)
        ax.set_xlabel(f"score · n = {n} rating{'s' if n != 1 else ''}"
                      + ("" if mean is None else f" · mean {mean:.2f}"), fontsize=8)
        ax.set_ylabel("% of ratings", fontsize=8)
        ax.set_ylim(0, max(100 / len(levels) * 1.2, max(c / total * 100 for c in counts) * 1.18 if counts else 1))
        ax.tick_params(labelsize=8)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    return _svg(fig)


def scatter_svg(pairs, *, scale: tuple[int, int] = (1, 5), seed: int = 0) -> str:
    """``pairs`` = (human mean, judge score) per item; both axes jittered so tied points stay visible."""
    lo, hi = scale
    data = np.asarray(pairs, dtype=float).reshape(-1, 2)
    rng = np.random.default_rng(seed)
    jitter = rng.uniform(-JITTER, JITTER, size=data.shape)
    fig = _figure(3.6, 3.4, dpi=100)
    with _style():
        ax = fig.add_subplot()
        ax.plot([lo, hi], [lo, hi], color="#999999", linewidth=1, linestyle="--", label="judge = people")
        ax.scatter(data[:, 0] + jitter[:, 0], data[:, 1] + jitter[:, 1], s=12, alpha=0.55, color="#1f5fa8",
                   linewidths=0)
        ax.set_xlim(lo - 0.4, hi + 0.4)
        ax.set_ylim(lo - 0.4, hi + 0.4)
        ax.set_xticks(range(lo, hi + 1))
        ax.set_yticks(range(lo, hi + 1))
        ax.set_xlabel("human mean")
        ax.set_ylabel("judge (mapped onto the rubric scale)")
        ax.set_aspect("equal")
        ax.grid(alpha=0.25)
        ax.legend(loc="upper left", fontsize=7, frameon=False)
    return _svg(fig, tight=True)


def confusion_svg(matrix, *, scale: tuple[int, int] = (1, 5)) -> str:
    """Rows: rounded human median; columns: rounded judge score; each cell shows its count."""
    lo, hi = scale
    counts = np.asarray(matrix, dtype=int)
    labels = list(range(lo, hi + 1))
    fig = _figure(3.6, 3.2, dpi=100)
    with _style():
        ax = fig.add_subplot()
        ax.imshow(counts, cmap="Blues", vmin=0, vmax=max(1, counts.max()))
        for i in range(counts.shape[0]):
            for j in range(counts.shape[1]):
                dark = counts[i, j] > counts.max() / 2
                ax.text(j, i, str(counts[i, j]), ha="center", va="center", fontsize=8,
                        color="white" if dark else "black")
        ax.set_xticks(range(len(labels)), labels)
        ax.set_yticks(range(len(labels)), labels)
        ax.set_xlabel("judge (rounded)")
        ax.set_ylabel("human median (rounded)")
    return _svg(fig, tight=True)


def over_time_svg(labels: list[str], series: dict[str, list[float | None]], *, ylabel: str,
                  xlabel: str = "window of submissions") -> str:
    """Agreement over time, one line per dimension. ``series``: dimension label → one value per
    window of submissions, or per judge version (None = undefined, a gap in the line)."""
    fig = _figure(6.4, 2.8)
    ax = fig.add_subplot()
    x = list(range(len(labels)))
    for name, values in series.items():
        ax.plot(x, [float("nan") if v is None else v for v in values], marker="o", markersize=3,
                linewidth=1.2, label=_plain(name))
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
        ax.bar([(b.lo + b.hi) / 2 for b in filled], [b.accuracy for b in filled],
               width=[b.hi - b.lo for b in filled], color="#1f5fa8", alpha=0.6, edgecolor="white",
               label="share right")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_xlabel("stated confidence")
        ax.set_ylabel("share of verdicts matching people")
        ax.grid(alpha=0.25)
        ax.legend(loc="upper left", fontsize=7, frameon=False)
    return _svg(fig, tight=True)
