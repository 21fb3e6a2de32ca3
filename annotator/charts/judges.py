"""Judge calibration figures: a jittered scatter of judge vs human mean, and the 5×5 confusion heatmap.

Both return SVG text. No user text is drawn (axis labels are fixed or come from the rubric), and pages
embed the SVG as an ``<img>`` data URI, so nothing in it can run in the page.
"""

from __future__ import annotations

import base64
import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

# Stable element ids (the same data gives the same file) and text kept as text; set per figure so
# the report's other plots keep their own settings.
RC = {"svg.hashsalt": "hcs-judges", "svg.fonttype": "none"}

JITTER = 0.12


def _svg(fig) -> str:
    buffer = io.StringIO()
    with matplotlib.rc_context(RC):
        fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    return buffer.getvalue()


def data_uri(svg: str) -> str:
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")


def scatter_svg(pairs, *, scale: tuple[int, int] = (1, 5), seed: int = 0) -> str:
    """``pairs`` = (human mean, judge score) per item; both axes jittered so tied points stay visible."""
    lo, hi = scale
    data = np.asarray(pairs, dtype=float).reshape(-1, 2)
    rng = np.random.default_rng(seed)
    jitter = rng.uniform(-JITTER, JITTER, size=data.shape)
    fig, ax = plt.subplots(figsize=(3.6, 3.4))
    ax.plot([lo, hi], [lo, hi], color="#999999", linewidth=1, linestyle="--", label="judge = people")
    ax.scatter(data[:, 0] + jitter[:, 0], data[:, 1] + jitter[:, 1], s=12, alpha=0.55, color="#1f5fa8", linewidths=0)
    ax.set_xlim(lo - 0.4, hi + 0.4)
    ax.set_ylim(lo - 0.4, hi + 0.4)
    ax.set_xticks(range(lo, hi + 1))
    ax.set_yticks(range(lo, hi + 1))
    ax.set_xlabel("human mean")
    ax.set_ylabel("judge (mapped onto the rubric scale)")
    ax.set_aspect("equal")
    ax.grid(alpha=0.25)
    ax.legend(loc="upper left", fontsize=7, frameon=False)
    return _svg(fig)


def confusion_svg(matrix, *, scale: tuple[int, int] = (1, 5)) -> str:
    """Rows: rounded human median; columns: rounded judge score; each cell shows its count."""
    lo, hi = scale
    counts = np.asarray(matrix, dtype=int)
    labels = list(range(lo, hi + 1))
    fig, ax = plt.subplots(figsize=(3.6, 3.2))
    ax.imshow(counts, cmap="Blues", vmin=0, vmax=max(1, counts.max()))
    for i in range(counts.shape[0]):
        for j in range(counts.shape[1]):
            dark = counts[i, j] > counts.max() / 2
            ax.text(j, i, str(counts[i, j]), ha="center", va="center", fontsize=8, color="white" if dark else "black")
    ax.set_xticks(range(len(labels)), labels)
    ax.set_yticks(range(len(labels)), labels)
    ax.set_xlabel("judge (rounded)")
    ax.set_ylabel("human median (rounded)")
    return _svg(fig)
