"""Does a judge's stated confidence mean what it says? Expected calibration error and a reliability table.

Guo, Pleiss, Sun & Weinberger (2017), "On Calibration of Modern Neural Networks", eq. 3: with M
equal-width bins B_m over [0, 1], ECE = Σ_m |B_m| / n · |acc(B_m) − conf(B_m)|.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DEFAULT_BINS = 10


@dataclass(frozen=True)
class ReliabilityBin:
    lo: float
    hi: float
    n: int
    confidence: float | None  # mean stated confidence in the bin
    accuracy: float | None  # share of the bin's verdicts that were right


@dataclass(frozen=True)
class Reliability:
    n: int
    ece: float | None
    bins: tuple[ReliabilityBin, ...]


def reliability(confidence, correct, *, n_bins: int = DEFAULT_BINS) -> Reliability:
    """ECE and per-bin confidence and accuracy; verdicts without a confidence (NaN) are left out.

    Bins are (lo, hi], the first one [0, hi], as in Guo et al. (2017).
    """
    conf = np.asarray(confidence, dtype=float)
    right = np.asarray(correct, dtype=bool)
    if conf.shape != right.shape:
        raise ValueError("confidence and correct must have one value per verdict")
    keep = np.isfinite(conf)
    conf, right = conf[keep], right[keep]
    if conf.size and (conf.min() < 0 or conf.max() > 1):
        raise ValueError("confidence must lie in [0, 1]")
    edges = np.linspace(0, 1, n_bins + 1)
    which = np.clip(np.ceil(conf * n_bins).astype(int) - 1, 0, n_bins - 1)
    bins, ece = [], 0.0
    for b in range(n_bins):
        mask = which == b
        n = int(mask.sum())
        mean_conf = float(conf[mask].mean()) if n else None
        accuracy = float(right[mask].mean()) if n else None
        if n:
            ece += n / conf.size * abs(accuracy - mean_conf)
        bins.append(ReliabilityBin(float(edges[b]), float(edges[b + 1]), n, mean_conf, accuracy))
    return Reliability(n=int(conf.size), ece=float(ece) if conf.size else None, bins=tuple(bins))
