"""The numbers of one window of a stream's calibration series, as stored (``StreamWindowStat.stats``) and
served by the API: :func:`hcs.streams.series.window_statistics` computes them (the batch report's
functions on the window's traces); this module only lays the stream's rows out as its arrays and its
result out as the API's JSON keys.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from typing import Any

import numpy as np

from hcs.calibration.metrics import N_BOOT
from hcs.defaults import DEFAULT_RESAMPLES
from hcs.numbers import finite_or_none
from hcs.streams import series as hcs_series

AGREEMENT_METRIC = "qwk"  # of the rounded judge score against the rounded human median
ALPHA_LEVEL = "interval"
# Bootstrap resamples per interval (the batch report's; its seed too): here so a test can make them fewer.
BOOTSTRAP = {"n_boot": N_BOOT, "n_resamples": DEFAULT_RESAMPLES}


def _interval(ci) -> list[float | None] | None:
    low, high = (finite_or_none(x) for x in ci)
    return None if low is None and high is None else [low, high]


def window_statistics(
    human: Mapping[Hashable, Mapping[Hashable, int]],
    judge: Mapping[Hashable, float],
    *,
    n_traces: int,
    scale: tuple[int, int],
    k: int = 3,
) -> dict[str, Any]:
    """One window's numbers.

    ``human``: ``{trace: {annotator: score}}`` of the window's labelled traces (one dimension);
    ``judge``: ``{trace: score}`` of every trace of the window the judge scored; ``n_traces``: the
    window's traces. Undefined values are None; an interval is ``[low, high]`` or None.
    """
    # In key order, so the bootstrap draws (and the intervals) do not depend on the order rows were read.
    labelled = sorted(t for t in human if human[t])
    traces = sorted(set(judge) | set(labelled))
    raters = sorted({a for t in labelled for a in human[t]}, key=str)
    column = {a: i for i, a in enumerate(raters)}
    matrix = np.full((len(labelled), len(raters)), np.nan)
    for row, t in enumerate(labelled):
        for a, score in human[t].items():
            matrix[row, column[a]] = score
    position = {t: i for i, t in enumerate(traces)}
    w = hcs_series.window_statistics(
        [judge.get(t, math.nan) for t in traces],
        [position[t] for t in labelled],
        matrix,
        raters=raters,
        k=k,
        scale=scale,
        n_window=n_traces,
        **BOOTSTRAP,
    )
    return _stored(w, n_traces=n_traces, n_human=len(labelled), n_judge=len(judge))


def _population(w: hcs_series.WindowStatistics, n_traces: int) -> str | None:
    """What PPI++'s ``ci95`` is for, in words: the window's traces, from the ones the judge scored."""
    if w.ppi is None:
        return None
    scored = w.ppi.n_labelled + w.ppi.n_unlabelled
    return f"the window's {n_traces} traces (the judge scored {scored}, people labelled {w.ppi.n_labelled})"


def _withheld(entry: dict[str, Any], reason: str | None) -> dict[str, Any]:
    return entry if reason is None else {**entry, "withheld": reason}


def _stored(w: hcs_series.WindowStatistics, *, n_traces: int, n_human: int, n_judge: int) -> dict[str, Any]:
    """The API's keys for one window (``docs/streams.md``)."""
    ppi = w.ppi
    return {
        "n_traces": n_traces,
        "n_human": n_human,
        "n_judge": n_judge,
        "n_paired": w.n_paired,  # labelled traces the judge scored: the ones compared with people
        "agreement": _withheld(
            {"metric": AGREEMENT_METRIC, "estimate": w.qwk, "ci95": _interval(w.qwk_ci95)}, w.qwk_withheld
        ),
        "human_mean": _withheld(
            {"estimate": w.human_mean, "ci95": _interval(w.human_mean_ci95)}, w.human_mean_withheld
        ),
        "ppi": (
            _withheld({"estimate": None, "ci95": None, "lam": None, "population": None}, w.ppi_withheld)
            if ppi is None
            else {
                "estimate": finite_or_none(ppi.estimate),
                "ci95": _interval(ppi.ci95),
                "lam": finite_or_none(ppi.lam),
                "population": _population(w, n_traces),
            }
        ),
        "judge_mean": w.judge_mean,
        "human_alpha": _withheld(
            {"level": ALPHA_LEVEL, "estimate": w.alpha_interval, "ci95": _interval(w.alpha_interval_ci95)},
            w.alpha_withheld,
        ),
        "alt_test": {
            "epsilon": w.alt_test.epsilon,
            "winning_rate": finite_or_none(w.alt_test.winning_rate),
            "passed": w.alt_test.outcome,
        },
    }
