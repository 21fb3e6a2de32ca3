"""The numbers of one window of a stream's calibration series, and the series' drift alerts: the one
place both are computed (``annotator.streams.services.series`` stores what these return).

Window statistics come from ``hcs`` as the batch report computes them: the quadratic-weighted κ of
the judge against the human median (``hcs.calibration.metrics``, as in ``calibrate_judge``), the human
mean with its normal interval and the PPI++ estimate of it (``hcs.ppi``), Krippendorff's α among the
people (``hcs.agreement``) and the alt-test (``hcs.calibration.alt_test``). Intervals are percentile
bootstraps (``hcs.agreement.bootstrap.percentile_interval``) over traces.

Drift alerts belong to ``hcs.streams`` (its ``window_alerts(windows) -> list[dict]``), which is not
part of this code yet: until it is, :func:`series_alerts` computes none and says so
(``alerts_status: "not computed"``); it never guesses.
"""

from __future__ import annotations

import importlib
import statistics
from collections.abc import Hashable, Mapping
from typing import Any

import numpy as np

from hcs.agreement import bootstrap_intervals, counts_from_long, krippendorff_alpha
from hcs.agreement.bootstrap import percentile_interval
from hcs.agreement.coefficients import AgreementError
from hcs.calibration.alt_test import alt_test
from hcs.calibration.metrics import quadratic_weighted_kappa, round_half_up
from hcs.numbers import finite_or_none
from hcs.ppi import classical_mean_ci, ppi_mean

N_BOOT = 1000
SEED = 0
AGREEMENT_METRIC = "qwk"  # of the rounded judge score against the rounded human median
ALPHA_LEVEL = "interval"
NOT_COMPUTED, COMPUTED = "not computed", "computed"


def _interval(values) -> list[float | None] | None:
    found = percentile_interval(np.asarray(values, dtype=float), 0.95)
    return None if found is None else [finite_or_none(found[0]), finite_or_none(found[1])]


def qwk_tables(tables: np.ndarray) -> np.ndarray:
    """``kappa_of_table(table, weights="quadratic")`` of each table of a stack (shape (n, K, K)) at once:
    the same formula, vectorised over the bootstrap's resamples."""
    k = tables.shape[1]
    i, j = np.indices((k, k))
    disagree = ((i - j) ** 2).astype(float)
    totals = tables.sum(axis=(1, 2)).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):  # an empty table: NaN, as kappa_of_table says
        p = tables / totals[:, None, None]
        expected = p.sum(axis=2)[:, :, None] * p.sum(axis=1)[:, None, :]
        values = 1 - (disagree * p).sum(axis=(1, 2)) / (disagree * expected).sum(axis=(1, 2))
    return np.where(np.isfinite(values), values, np.nan)


def _qwk_resampled(human_cat: np.ndarray, judge_cat: np.ndarray, scale: tuple[int, int], rng) -> np.ndarray:
    """QWK of each bootstrap resample of the pairs, from its confusion table."""
    lo, hi = scale
    size = hi - lo + 1
    cells = (human_cat - lo) * size + (judge_cat - lo)
    idx = rng.integers(0, len(cells), size=(N_BOOT, len(cells)))
    flat = cells[idx] + (np.arange(N_BOOT) * size * size)[:, None]
    tables = np.bincount(flat.ravel(), minlength=N_BOOT * size * size).reshape(N_BOOT, size, size)
    return qwk_tables(tables)


def window_statistics(
    human: Mapping[Hashable, Mapping[Hashable, int]],
    judge: Mapping[Hashable, float],
    *,
    n_traces: int,
    scale: tuple[int, int],
) -> dict[str, Any]:
    """One window's numbers.

    ``human``: ``{trace: {annotator: score}}`` of the window's labelled traces (one dimension);
    ``judge``: ``{trace: score}`` of every trace of the window the judge scored; ``n_traces``: the
    window's traces. Undefined values are None; an interval is ``[low, high]`` or None.
    """
    lo, hi = scale
    categories = list(range(lo, hi + 1))
    # In key order, so the bootstrap draws (and the intervals) do not depend on the order rows were read.
    labelled = sorted(t for t in human if human[t])
    paired = [t for t in labelled if t in judge]
    out: dict[str, Any] = {
        "n_traces": n_traces,
        "n_human": len(labelled),
        "n_judge": len(judge),
        "n_paired": len(paired),
    }
    # Agreement of judge and people, as calibrate_judge measures it (QWK on the rubric's categories).
    estimate, ci = None, None
    if paired:
        human_cat = np.clip(
            round_half_up([statistics.median(human[t].values()) for t in paired]), lo, hi
        ).astype(int)
        judge_cat = np.clip(round_half_up([judge[t] for t in paired]), lo, hi).astype(int)
        estimate = finite_or_none(quadratic_weighted_kappa(human_cat, judge_cat, scale))
        if len(paired) >= 3:
            ci = _interval(_qwk_resampled(human_cat, judge_cat, scale, np.random.default_rng(SEED)))
    out["agreement"] = {"metric": AGREEMENT_METRIC, "estimate": estimate, "ci95": ci}
    # The human mean (mean over labelled traces of each trace's mean rating).
    y_all = np.array([statistics.fmean(human[t].values()) for t in labelled], dtype=float)
    if len(y_all) >= 2:
        mean, m_lo, m_hi = classical_mean_ci(y_all)
        out["human_mean"] = {"estimate": mean, "ci95": [finite_or_none(m_lo), finite_or_none(m_hi)]}
    else:
        out["human_mean"] = {"estimate": float(y_all[0]) if len(y_all) else None, "ci95": None}
    # PPI++: the labelled traces' human means with the judge's score, and the judge on the rest.
    y = np.array([statistics.fmean(human[t].values()) for t in paired], dtype=float)
    yhat = np.array([judge[t] for t in paired], dtype=float)
    labelled_set = set(labelled)
    yhat_u = np.array([judge[t] for t in sorted(judge) if t not in labelled_set], dtype=float)
    ppi = ppi_mean(y, yhat, yhat_u) if len(y) >= 2 else None
    out["ppi"] = (
        {"estimate": None, "ci95": None, "lam": None}
        if ppi is None
        else {
            "estimate": finite_or_none(ppi.estimate),
            "ci95": [finite_or_none(ppi.ci95[0]), finite_or_none(ppi.ci95[1])],
            "lam": finite_or_none(ppi.lam),
        }
    )
    out["judge_mean"] = finite_or_none(float(np.mean([judge[t] for t in sorted(judge)]))) if judge else None
    out["human_alpha"] = _human_alpha(human, labelled, categories)
    result = alt_test({t: human[t] for t in paired}, {t: judge[t] for t in paired})
    out["alt_test"] = {
        "epsilon": result.epsilon,
        "winning_rate": finite_or_none(result.winning_rate),
        "passed": result.outcome,
    }
    return out


def _human_alpha(human, labelled, categories) -> dict[str, Any]:
    """Krippendorff's α (interval) among the people, with a bootstrap interval over traces."""
    items = [t for t in labelled for _ in human[t]]
    scores = [s for t in labelled for s in human[t].values()]
    empty = {"level": ALPHA_LEVEL, "estimate": None, "ci95": None}
    if not items:
        return empty
    counts = counts_from_long(np.array([str(t) for t in items]), np.array(scores), categories)
    if not (counts.sum(axis=1) >= 2).any():
        return empty
    try:
        estimate = finite_or_none(krippendorff_alpha(counts, categories, ALPHA_LEVEL))
    except AgreementError:
        return empty
    resampled = bootstrap_intervals(counts, categories, n_resamples=N_BOOT, seed=SEED)
    return {"level": ALPHA_LEVEL, "estimate": estimate, "ci95": _interval(resampled["alpha_" + ALPHA_LEVEL])}


def alerts_status() -> str:
    """Whether drift alerts are computed on this server (``hcs.streams.window_alerts`` installed)."""
    try:
        module = importlib.import_module("hcs.streams")
    except ModuleNotFoundError as exc:
        if exc.name not in ("hcs.streams", "hcs"):
            raise
        return NOT_COMPUTED
    return COMPUTED if callable(getattr(module, "window_alerts", None)) else NOT_COMPUTED


def series_alerts(windows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    """Drift alerts of one series (its windows as :func:`window_statistics` gives them, with start and
    end), and whether they were computed. ``hcs.streams.window_alerts`` computes them; while that module
    (or the function) is not installed, none are computed: ``([], "not computed")``."""
    if alerts_status() == NOT_COMPUTED:
        return [], NOT_COMPUTED
    # A module hcs.streams needs but lacks raises in alerts_status: an error, not "pending".
    return list(importlib.import_module("hcs.streams").window_alerts(windows)), COMPUTED
