"""One window of a judged stream: the statistics the batch report shows, for one judge × dimension.

A window (a day, a week, or every N sampled traces) holds the judge's scores on the traces it scored and,
for the traces the hash rule sampled, the scores of k people. The judge's numbers come from the functions
the batch report uses on the same items — :func:`hcs.calibration.calibrate_judge` (QWK, the alt-test, the
correlations) on the paired traces and :func:`hcs.ppi.ppi_mean` (PPI++ for the mean of the window's
traces) — and people's from :func:`hcs.agreement.dimension_agreement` (Krippendorff's α) on every labelled
trace, so a window's figures equal a batch report's on the same traces. Two choices are the stream's own:
the human mean's interval is Student's t clipped to the scale, and QWK and α are withheld below
``MIN_TRACES`` traces (docs/streams-statistics.md says why).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from scipy.stats import t as t_dist

from hcs.agreement import DimensionAgreement, counts_from_ratings, dimension_agreement
from hcs.agreement.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED
from hcs.calibration.alt_test import AltTestResult
from hcs.calibration.metrics import (
    N_BOOT,
    SCALE,
    JudgeCalibration,
    bootstrap_ci,
    calibrate_judge,
    round_half_up,
)
from hcs.defaults import DEFAULT_EPSILON
from hcs.numbers import finite_or_none
from hcs.ppi import PPIMean, ppi_mean

Interval = tuple[float | None, float | None]

# Below this many traces a window's agreement figures (QWK against people, α among people) are withheld:
# a percentile bootstrap over fewer traces takes a handful of distinct values (one trace: QWK 1 or
# undefined, "[1, 1]"), and its interval is neither wide enough nor meaningful (Efron and Tibshirani
# 1993, §13.3 place the percentile interval's reliability well above ten observations).
MIN_TRACES = 10
# PPI++ tunes λ on the same labels it averages, and its interval is Student's t on n − 2 degrees of
# freedom: below ``MIN_TRACES`` labels that interval is as wide as several scales, so it is withheld too.


def too_few(n: int, what: str) -> str:
    """Why a figure is withheld: ``what`` (e.g. "paired traces") are fewer than ``MIN_TRACES``."""
    return f"fewer than {MIN_TRACES} {what} ({n})"


CONSTANT = "every bootstrap resample gave the same value"


@dataclass(frozen=True)
class WindowStatistics:
    """One judge × dimension over one window. Undefined values are ``None``.

    ``human_mean`` is the mean over all labelled traces (whichever judge scored them) of their human mean,
    with Student's t 95 % interval for the mean of the population the traces are a sample of, clipped to
    the scale; α among people is over the same traces. ``ppi`` is the PPI++ estimate of the human mean of
    the window's traces (``ci95`` for the window's own traces, ``ci95_superpopulation`` for the stream they
    come from), from the traces the judge scored; ``judge_mean`` the judge's mean over them. ``qwk`` is
    the report's: the rounded judge against the rounded human median over the paired traces (labelled and
    scored), with a percentile bootstrap interval over traces. QWK and α are None below ``MIN_TRACES``
    traces, and an interval whose resamples are all equal is None; ``*_withheld`` says why."""

    n_traces: int
    n_labelled: int  # traces people rated
    n_paired: int  # of them, the ones the judge scored
    judge_mean: float | None
    human_mean: float | None
    human_mean_ci95: Interval
    ppi: PPIMean | None
    qwk: float | None
    qwk_ci95: Interval
    alt_test_omega: float | None  # the alt-test's winning rate ω (None when not testable)
    alpha_interval: float | None  # Krippendorff's α among people, interval metric
    alpha_interval_ci95: Interval
    alpha_ordinal: float | None
    alpha_ordinal_ci95: Interval
    calibration: JudgeCalibration
    agreement: DimensionAgreement
    qwk_withheld: str | None = None
    alpha_withheld: str | None = None
    ppi_withheld: str | None = None
    human_mean_withheld: str | None = None  # of its interval: one labelled trace has none

    @property
    def alt_test(self) -> AltTestResult:
        return self.calibration.alt_test


def human_mapping(human, raters: Sequence | None = None) -> dict[int, dict]:
    """Items × raters scores (NaN = not rated) → ``{row: {rater: score}}``, the calibration functions' input.

    >>> human_mapping([[4, float("nan"), 5]], raters=["ann", "bo", "cy"])
    {0: {'ann': 4.0, 'cy': 5.0}}
    """
    data = np.asarray(human, dtype=float)
    names = list(range(data.shape[1])) if raters is None else list(raters)
    if len(names) != data.shape[1]:
        raise ValueError(f"{len(names)} rater names for {data.shape[1]} columns")
    return {
        i: {names[r]: float(data[i, r]) for r in range(data.shape[1]) if np.isfinite(data[i, r])}
        for i in range(data.shape[0])
    }


def first_k_rows(human, k: int) -> np.ndarray:
    """The first ``k`` ratings (in column order) of the items rated at least ``k`` times: Fleiss' κ's input.

    >>> first_k_rows([[1, float("nan"), 2, 3], [4, float("nan"), float("nan"), 5]], 3).tolist()
    [[1.0, 2.0, 3.0]]
    """
    data = np.asarray(human, dtype=float)
    rated = np.isfinite(data)
    keep = rated.sum(axis=1) >= k
    # Stable sort puts each row's rated columns first, in column order.
    order = np.argsort(~rated[keep], axis=1, kind="stable")[:, :k]
    return np.take_along_axis(data[keep], order, axis=1)


def _interval(ci) -> Interval:
    if ci is None:
        return (None, None)
    return (finite_or_none(ci[0]), finite_or_none(ci[1]))


def window_statistics(
    judge_scores,
    labelled,
    human,
    *,
    raters: Sequence | None = None,
    k: int = 3,
    scale: tuple[int, int] = SCALE,
    epsilon: float = DEFAULT_EPSILON,
    n_boot: int = N_BOOT,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    n_window: int | None = None,
) -> WindowStatistics:
    """The statistics of one window for one judge × dimension.

    Parameters
    ----------
    judge_scores : array_like, shape (traces,)
        The judge's score of every trace in the window, on the rubric scale (NaN: not scored).
    labelled : array_like of int, shape (labelled,)
        Positions in ``judge_scores`` of the traces sampled for people (the hash sample), in the order
        of ``human``'s rows. A row nobody has rated yet makes its trace unlabelled (as in the report).
    human : array_like, shape (labelled, raters)
        People's scores, NaN where a rater did not rate a trace.
    raters, k, scale, epsilon
        ``human``'s column names (the alt-test compares the judge with each); ratings per sampled trace
        (Fleiss' κ uses the first k); the lowest and highest score; the alt-test's margin ε.
    n_boot, n_resamples, seed : int
        Bootstrap resamples for QWK and the correlations, for the agreement coefficients, and their seed.
    n_window : int, optional
        The window's traces when ``judge_scores`` holds only some (a daily cost cap): PPI++'s ``ci95`` is
        for the mean of all of them. Default: ``len(judge_scores)``.

    References: Cohen (1968), QWK; Calderon, Reichart and Dror (2025), the alt-test; Krippendorff (2011), α;
    Angelopoulos, Duchi and Zrnic (2023), PPI++.

    Examples
    --------
    >>> judge = [4, 3, 5, 2, 4, 3, 1, 5]
    >>> human = [[4, 4, 5], [3, 2, 3], [5, 5, 4], [2, 1, 2]]
    >>> w = window_statistics(judge, [0, 1, 2, 3], human, n_boot=200, n_resamples=200)
    >>> w.n_traces, w.n_labelled, w.judge_mean, round(w.human_mean, 4), w.qwk, w.qwk_withheld
    (8, 4, 3.375, 3.3333, None, 'fewer than 10 paired traces (4)')
    >>> w.ppi, w.ppi_withheld, w.alpha_interval
    (None, 'fewer than 10 labelled traces the judge scored (4)', None)
    """
    judge_all, where, data = _arrays(judge_scores, labelled, human)
    scored = np.isfinite(judge_all)
    people = np.isfinite(data).any(axis=1)
    rated = people & scored[where]
    mapping = human_mapping(data[rated], raters)
    judge_labelled = judge_all[where][rated]
    calibration, qwk_ci = _judge_against_people(
        mapping, judge_labelled, scale, epsilon=epsilon, n_boot=n_boot, seed=seed
    )
    item_mean = np.array([np.mean(list(r.values())) for r in mapping.values()])
    ppi, ppi_withheld = _ppi(item_mean, judge_labelled, judge_all, where[rated], scored, n_window, scale)
    qwk, qwk_ci95, qwk_withheld = _shown(calibration.qwk, qwk_ci, len(mapping), "paired traces")
    return WindowStatistics(
        n_traces=int(scored.sum()),
        n_paired=len(mapping),
        judge_mean=finite_or_none(judge_all[scored].mean()) if scored.any() else None,
        ppi=ppi,
        ppi_withheld=ppi_withheld,
        qwk=qwk,
        qwk_ci95=qwk_ci95,
        qwk_withheld=qwk_withheld,
        alt_test_omega=calibration.alt_test.winning_rate,
        calibration=calibration,
        # People's own figures over every labelled trace: they must not depend on which judge is shown.
        **_people(data[people], scale, k=k, n_resamples=n_resamples, seed=seed),
    )


def _people(rows, scale, *, k: int, n_resamples: int, seed: int) -> dict:
    """The window's figures on people alone (``rows``: every labelled trace's ratings)."""
    everyone = np.array([np.mean(list(r.values())) for r in human_mapping(rows).values()])
    human_mean, h_lo, h_hi = _human_mean(everyone, scale)
    agreement = _rater_agreement(rows, scale, k=k, n_resamples=n_resamples, seed=seed)
    alpha, alpha_ci95, alpha_withheld = _shown(
        agreement.alpha_interval, agreement.alpha_interval_ci95, len(rows), "labelled traces"
    )
    alpha_ord, alpha_ord_ci95, _ = _shown(
        agreement.alpha_ordinal, agreement.alpha_ordinal_ci95, len(rows), "labelled traces"
    )
    return {
        "n_labelled": len(rows),
        "human_mean": finite_or_none(human_mean),
        "human_mean_ci95": _interval((h_lo, h_hi)),
        "human_mean_withheld": "one labelled trace: no interval" if len(everyone) == 1 else None,
        "alpha_interval": alpha,
        "alpha_interval_ci95": alpha_ci95,
        "alpha_withheld": alpha_withheld,
        "alpha_ordinal": alpha_ord,
        "alpha_ordinal_ci95": alpha_ord_ci95,
        "agreement": agreement,
    }


def _shown(estimate, ci, n: int, what: str) -> tuple[float | None, Interval, str | None]:
    """An agreement coefficient as a window shows it: withheld below ``MIN_TRACES`` of ``what``, its
    interval withheld when undefined or when every resample gave the same value (a certainty it does not
    have)."""
    if n < MIN_TRACES:
        return None, (None, None), too_few(n, what)
    low, high = _interval(ci)
    if low is None or high is None:
        return finite_or_none(estimate), (None, None), None
    if low == high:
        return finite_or_none(estimate), (None, None), CONSTANT
    return finite_or_none(estimate), (low, high), None


def _human_mean(item_mean: np.ndarray, scale) -> tuple[float, float, float]:
    """The mean of the labelled traces' human means with Student's t 95 % interval (sample SD, n − 1
    degrees of freedom: the normal interval with the population SD under-covers at 5–10 labels), for the
    mean of the population the window's traces are a sample of. Clipped to the scale: the true mean lies
    in it, so the clipped interval covers whenever the unclipped one does. One trace: no interval."""
    if len(item_mean) >= 2:
        mean = float(item_mean.mean())
        half = float(t_dist.ppf(0.975, len(item_mean) - 1)) * float(item_mean.std(ddof=1))
        half /= math.sqrt(len(item_mean))
        return mean, max(scale[0], mean - half), min(scale[1], mean + half)
    if len(item_mean) == 1:
        return float(item_mean[0]), math.nan, math.nan
    return math.nan, math.nan, math.nan


def _qwk_ci(mapping, judge_labelled, scale, *, n_boot: int, seed: int) -> tuple[float, float]:
    """The bootstrap interval of QWK between the rounded human median and the rounded judge score, as
    the batch report rounds them."""
    if not len(mapping):
        return math.nan, math.nan
    lo, hi = scale
    median = np.array([np.median(list(r.values())) for r in mapping.values()])
    human_cat = np.clip(round_half_up(median), lo, hi).astype(int)
    judge_cat = np.clip(round_half_up(judge_labelled), lo, hi).astype(int)
    return bootstrap_ci(human_cat, judge_cat, "qwk", n_boot=n_boot, seed=seed, scale=scale)


def _arrays(judge_scores, labelled, human) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The judge's scores, the labelled positions and the human matrix as arrays, checked."""
    judge_all = np.asarray(judge_scores, dtype=float).ravel()
    where = np.asarray(labelled, dtype=int).ravel()
    data = np.asarray(human, dtype=float)
    # A window nobody labelled: no rows (reshape cannot infer the columns of an empty array).
    data = data.reshape(len(where), -1) if data.size else np.empty((len(where), 0))
    if len(np.unique(where)) != len(where):
        raise ValueError("a trace is listed twice in labelled")
    return judge_all, where, data


def _rater_agreement(rated, scale, *, k: int, n_resamples: int, seed: int) -> DimensionAgreement:
    """Agreement among the raters of the labelled traces, as the batch report computes it."""
    categories = list(range(scale[0], scale[1] + 1))
    return dimension_agreement(
        counts_from_ratings(rated, categories),
        counts_from_ratings(first_k_rows(rated, k), categories),
        categories,
        k=k,
        n_resamples=n_resamples,
        seed=seed,
    )


def _judge_against_people(mapping, judge_labelled, scale, *, epsilon: float, n_boot: int, seed: int):
    """The judge's calibration against the labelled traces' raters, and QWK's bootstrap interval."""
    calibration = calibrate_judge(
        mapping,
        dict(enumerate(judge_labelled.tolist())),
        epsilon=epsilon,
        n_boot=n_boot,
        seed=seed,
        scale=scale,
    )
    return calibration, _qwk_ci(mapping, judge_labelled, scale, n_boot=n_boot, seed=seed)


def _ppi(
    item_mean, judge_labelled, judge_all, labelled, scored, n_window, scale
) -> tuple[PPIMean | None, str | None]:
    """PPI++ over the window. As in the batch report, a scored trace nobody has rated yet (sampled or
    not) counts as unlabelled. When the judge scored only some of the window's traces, the estimate is
    read on the scored ones and its interval is for the whole window: the sampled traces are a hash
    sample of the window and the judge's other traces a hash sample of the rest, so the scored traces
    are a simple random sample of the window and the labelled ones a simple random sample of them."""
    if len(item_mean) < MIN_TRACES:
        return None, too_few(len(item_mean), "labelled traces the judge scored") if len(item_mean) else None
    others = np.ones(len(judge_all), dtype=bool)
    others[labelled] = False
    unlabelled = judge_all[others & scored]
    # Never below the traces given: the window's count and its scores are read one after the other.
    population = max(len(judge_all) if n_window is None else n_window, len(item_mean) + len(unlabelled))
    found = ppi_mean(item_mean, judge_labelled, unlabelled, n_population=population)
    # Clipped to the scale, as the human mean's: the mean lies in it, so clipping never loses coverage.
    clipped = replace(
        found, ci95=_clip(found.ci95, scale), ci95_superpopulation=_clip(found.ci95_superpopulation, scale)
    )
    return clipped, None


def _clip(ci, scale) -> tuple[float, float]:
    return (max(scale[0], ci[0]), min(scale[1], ci[1]))
