"""Score distribution plots, drawn server-side as inline SVG (matplotlib, Agg backend).

Text stays text (``svg.fonttype = none``) and matplotlib escapes it for XML; labels
are also stripped of ``$`` so a rubric label can never switch on mathtext.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")

from matplotlib import rcParams
from matplotlib.figure import Figure

rcParams["svg.fonttype"] = "none"
rcParams["svg.hashsalt"] = "hcs-report"  # stable element ids, so the same report gives the same SVG

_PROLOG = re.compile(r"^.*?(?=<svg)", re.DOTALL)
_METADATA = re.compile(r"\s*<metadata>.*?</metadata>", re.DOTALL)


def _plain(label: str) -> str:
    return label.replace("$", r"\$")


def distribution_svg(title: str, levels: Sequence[int], counts: Sequence[int], *, mean: float | None = None) -> str:
    """A bar chart of how often each score was given, as an ``<svg>`` element (no XML prolog)."""
    total = sum(counts) or 1
    fig = Figure(figsize=(3.4, 2.3), dpi=72)
    ax = fig.add_subplot()
    bars = ax.bar([str(v) for v in levels], [c / total * 100 for c in counts], color="#2457c5")
    for bar, c in zip(bars, counts):
        ax.annotate(str(c), (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center", va="bottom",
                    fontsize=8, xytext=(0, 1), textcoords="offset points")
    ax.set_title(_plain(title), fontsize=10)
    ax.set_xlabel("score" + ("" if mean is None else f" (mean {mean:.2f})"), fontsize=8)
    ax.set_ylabel("% of ratings", fontsize=8)
    ax.set_ylim(0, max(100 / len(levels) * 1.2, max(c / total * 100 for c in counts) * 1.18 if counts else 1))
    ax.tick_params(labelsize=8)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    svg = _PROLOG.sub("", buf.getvalue(), count=1)
    return _METADATA.sub("", svg, count=1).strip()
