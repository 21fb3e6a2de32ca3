"""One window of a judged stream: the batch report's functions give the same numbers on the same traces,
and PPI++ per window equals ppi_py."""

import krippendorff
import numpy as np
import pytest
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

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
    assert w.n_labelled == 38
    assert w.n_traces == 118
    keep = np.ones(40, dtype=bool)
    keep[[0, 1]] = False
    unlabelled = np.append(np.delete(judge, where), judge[where[1]])
    expected = ppi_mean(
        np.nanmean(human[keep], axis=1), judge[where][keep], unlabelled[np.isfinite(unlabelled)]
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
