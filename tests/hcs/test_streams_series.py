"""One window of a judged stream: the batch report's functions give the same numbers on the same traces,
and PPI++ per window equals ppi_py."""

import krippendorff
import numpy as np
import pytest
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate
from scipy import stats

from hcs.agreement import counts_from_ratings, dimension_agreement, first_k_counts
from hcs.calibration import calibrate_judge
from hcs.ppi import ppi_mean
from hcs.streams.series import first_k_rows, human_mapping, window_statistics
from hcs.streams.simulate import simulate_window


def _window(seed=3, traces=400, labelled=60):
    rng = np.random.default_rng(seed)
    human, judge_sampled = simulate_window(rng, labelled, 3, 0.6)
    # The rest of the window's traces: judge scores only.
    _, judge_rest = simulate_window(rng, traces - labelled, 3, 0.6)
    at = (traces - labelled) // 2  # the sampled traces sit in the middle of the window
    judge = np.concatenate([judge_rest[:at], judge_sampled, judge_rest[at:]])
    where = np.arange(at, at + labelled)
    return judge, where, human


def test_same_numbers_as_the_batch_report_functions():
    judge, where, human = _window()
    raters = [f"r{i}" for i in range(human.shape[1])]
    w = window_statistics(judge, where, human, raters=raters, n_boot=300, n_resamples=300, seed=7)

    mapping = {
        item: {raters[r]: human[item, r] for r in range(human.shape[1]) if np.isfinite(human[item, r])}
        for item in range(len(where))
    }
    batch = calibrate_judge(mapping, {i: judge[where][i] for i in range(len(where))}, n_boot=300, seed=7)
    assert w.calibration == batch
    assert w.qwk == batch.qwk and w.qwk is not None
    assert w.alt_test_omega == batch.alt_test.winning_rate
    assert w.alt_test == batch.alt_test

    # The report's agreement: all ratings, and Fleiss' κ on each item's first k ratings in time order.
    item, rater = np.nonzero(np.isfinite(human))
    fleiss = first_k_counts(item, human[item, rater].astype(int), [1, 2, 3, 4, 5], 3, order=rater)
    report = dimension_agreement(
        counts_from_ratings(human, [1, 2, 3, 4, 5]), fleiss, [1, 2, 3, 4, 5], k=3, n_resamples=300, seed=7
    )
    assert w.agreement == report
    assert w.alpha_interval == pytest.approx(
        krippendorff.alpha(reliability_data=human.T, level_of_measurement="interval"), abs=1e-12
    )
    assert w.alpha_interval_ci95 == report.alpha_interval_ci95

    item_mean = np.nanmean(human, axis=1)
    others = np.setdiff1d(np.arange(len(judge)), where)
    assert w.ppi == ppi_mean(item_mean, judge[where], judge[others])
    assert w.human_mean == pytest.approx(item_mean.mean())
    assert w.judge_mean == pytest.approx(judge.mean())
    assert w.n_traces == 400 and w.n_labelled == 60


def test_ppi_per_window_equals_ppi_py():
    judge, where, human = _window(seed=11)
    w = window_statistics(judge, where, human, n_boot=50, n_resamples=0)
    y = np.nanmean(human, axis=1)
    yhat = judge[where]
    yhat_u = np.delete(judge, where)
    assert w.ppi.estimate == pytest.approx(float(ppi_mean_pointestimate(y, yhat, yhat_u)[0]), rel=1e-10)
    lo, hi = ppi_mean_ci(y, yhat, yhat_u, alpha=0.05)
    assert w.ppi.ci95_superpopulation == pytest.approx((float(lo[0]), float(hi[0])), rel=1e-10)
    assert 0 < w.ppi.lam <= 1


def test_unscored_traces_are_left_out_and_unrated_ones_are_unlabelled():
    judge, where, human = _window(seed=5, traces=120, labelled=40)
    judge = judge.copy()
    human = human.copy()
    judge[where[0]] = np.nan  # the judge failed on a sampled trace
    judge[0] = np.nan  # and on an unsampled one
    human[1] = np.nan  # nobody rated this sampled trace yet: it counts as unlabelled, as in the report
    w = window_statistics(judge, where, human, n_boot=50, n_resamples=0)
    assert w.n_labelled == 39 and w.n_paired == 38  # people's figures keep the trace the judge missed
    assert w.n_traces == 118
    keep = np.ones(40, dtype=bool)
    keep[[0, 1]] = False
    unlabelled = np.append(np.delete(judge, where), judge[where[1]])
    # The interval is for all 120 traces of the window, the two the judge missed too.
    expected = ppi_mean(
        np.nanmean(human[keep], axis=1),
        judge[where][keep],
        unlabelled[np.isfinite(unlabelled)],
        n_population=120,
    )
    assert w.ppi.n_unlabelled == 80 == expected.n_unlabelled
    assert w.ppi.estimate == pytest.approx(expected.estimate, rel=1e-12)
    assert w.ppi.ci95 == pytest.approx(expected.ci95, rel=1e-12)


def test_helpers():
    assert human_mapping([[1, np.nan], [np.nan, 2]]) == {0: {0: 1.0}, 1: {1: 2.0}}
    rows = first_k_rows([[np.nan, 3, 4, 5], [1, np.nan, np.nan, 2], [1, 2, 3, np.nan]], 3)
    assert rows.tolist() == [[3, 4, 5], [1, 2, 3]]
    with pytest.raises(ValueError):
        window_statistics([1, 2, 3], [0, 0], [[1, 2], [2, 3]])


def test_a_judge_that_scored_only_the_labelled_traces_leaves_an_interval_for_the_window():
    # A daily cost cap: the judge scored the 12 sampled traces (all labelled) of a window of 40.
    rng = np.random.default_rng(2)
    human = rng.integers(1, 6, size=(12, 3)).astype(float)
    judge = np.full(40, np.nan)
    judge[:12] = np.nanmean(human, axis=1).round()
    w = window_statistics(judge, np.arange(12), human, n_boot=50, n_resamples=0)
    lo, hi = w.ppi.ci95
    assert hi - lo > 0
    # Nothing for PPI to add: the labelled traces' mean, with the simple random sample's interval for
    # the mean of the 40 traces (Cochran 1977, theorem 2.2: finite-population correction 1 − 12/40),
    # clipped to the scale.
    y = np.nanmean(human, axis=1)
    half = stats.t.ppf(0.975, 11) * y.std(ddof=1) / np.sqrt(12) * np.sqrt(1 - 12 / 40)
    assert w.ppi.estimate == pytest.approx(y.mean())
    assert (lo, hi) == pytest.approx((max(1, y.mean() - half), min(5, y.mean() + half)), rel=1e-12)


def test_the_window_interval_covers_the_window_mean_when_the_judge_scored_a_sample():
    # Two-phase: the judge scores 60 of a window's 200 traces at random, people label 15 of those.
    rng = np.random.default_rng(0)
    truth = rng.integers(1, 6, size=200).astype(float)
    judge = np.clip(truth + rng.choice([-1, 0, 0, 1], size=200), 1, 5)
    covered, runs = 0, 2000
    for _ in range(runs):
        scored = rng.permutation(200)[:60]
        y, yhat, yu = truth[scored[:15]], judge[scored[:15]], judge[scored[15:]]
        lo, hi = ppi_mean(y, yhat, yu, n_population=200).ci95
        covered += lo <= truth.mean() <= hi
    assert covered / runs == pytest.approx(0.95, abs=0.02)
    # Without the window's size the interval is for the 60 scored traces only, and under-covers.
    assert ppi_mean(y, yhat, yu).width < ppi_mean(y, yhat, yu, n_population=200).width
    with pytest.raises(ValueError):
        ppi_mean(y, yhat, yu, n_population=59)


def test_peoples_figures_do_not_depend_on_the_judge():
    judge, where, human = _window(seed=8, traces=100, labelled=30)
    partial = judge.copy()
    partial[where[:20]] = np.nan  # this judge scored only 10 of the 30 labelled traces
    a = window_statistics(judge, where, human, n_boot=50, n_resamples=50)
    b = window_statistics(partial, where, human, n_boot=50, n_resamples=50)
    assert (b.n_labelled, b.n_paired, a.n_paired) == (30, 10, 30)
    assert a.human_mean == b.human_mean and a.human_mean_ci95 == b.human_mean_ci95
    assert a.alpha_interval == b.alpha_interval and a.alpha_interval_ci95 == b.alpha_interval_ci95
    assert a.qwk != b.qwk


def test_too_few_traces_or_constant_resamples_give_no_interval():
    w = window_statistics([4.0], [0], [[4, 4, 4]], n_boot=50, n_resamples=50)
    assert (w.qwk, w.qwk_ci95, w.qwk_withheld) == (None, (None, None), "fewer than 10 paired traces (1)")
    assert (w.alpha_interval, w.alpha_interval_ci95, w.alpha_withheld) == (
        None,
        (None, None),
        "fewer than 10 labelled traces (1)",
    )
    assert (w.ppi, w.ppi_withheld) == (None, "fewer than 10 labelled traces the judge scored (1)")
    assert w.human_mean == 4.0 and w.human_mean_withheld == "one labelled trace: no interval"
    # Twelve traces on which the judge matches people exactly: QWK 1 in every resample.
    human = np.array([[s, s, s] for s in [1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 3, 3]], dtype=float)
    w = window_statistics(human[:, 0], np.arange(12), human, n_boot=50, n_resamples=50)
    assert (w.qwk, w.qwk_ci95, w.qwk_withheld) == (
        1.0,
        (None, None),
        "every bootstrap resample gave the same value",
    )


def test_the_human_mean_interval_is_students_t_within_the_scale():
    human = np.array([[5, 5, 5], [5, 5, 4], [5, 5, 5], [3, 4, 3], [5, 5, 5]], dtype=float)
    w = window_statistics(np.full(5, 4.0), np.arange(5), human, n_boot=50, n_resamples=0)
    y = human.mean(axis=1)
    lo, hi = stats.t.interval(0.95, 4, loc=y.mean(), scale=stats.sem(y))
    assert hi > 5 and w.human_mean_ci95 == pytest.approx((lo, 5.0), rel=1e-12)
