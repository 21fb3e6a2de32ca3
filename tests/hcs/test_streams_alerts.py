"""Anytime-valid alerts on a judged stream: the betting confidence sequence against confseq's values and
by simulated coverage, false alarms under no change within the stated bound, detection of a change, one
alert per change, and which kind of alert a change raises."""

import warnings
from dataclasses import replace

import numpy as np
import pytest
from scipy.stats import binom

from hcs.streams import alerts
from hcs.streams.alerts import (
    detect_changes,
    item_agreement,
    item_level,
    item_rater_agreement,
    stream_alerts,
)
from hcs.streams.betting import betting_cs, lower_bound, predictable_bets, upper_bound
from hcs.streams.simulate import StreamModel, simulate_window

# confseq 0.0.11, ``confseq.betting.betting_cs(x, alpha=…, running_intersection=…)`` with its defaults,
# on x_i = frac(i φ)² for i = 1…200: (t, lower, upper), rounded to three decimals.
GOLDEN_X = ((np.arange(1, 201) * 0.6180339887498949) % 1.0) ** 2
CONFSEQ = {
    (0.05, False): [(10, 0.108, 0.671), (50, 0.221, 0.461), (200, 0.269, 0.399)],
    (0.1, True): [(10, 0.137, 0.632), (50, 0.23, 0.44), (200, 0.274, 0.392)],
}


@pytest.mark.parametrize("alpha,running", list(CONFSEQ))
def test_betting_cs_equals_confseq(alpha, running):
    lo, hi = betting_cs(GOLDEN_X, alpha, running_intersection=running)
    for t, ref_lo, ref_hi in CONFSEQ[(alpha, running)]:
        assert round(float(lo[t - 1]), 3) == ref_lo
        assert round(float(hi[t - 1]), 3) == ref_hi


def test_betting_cs_covers_at_all_times_by_simulation():
    # Uniform coverage: P(the mean ever leaves the sequence in 150 steps) ≤ α. With 200 streams the
    # count of misses stays below the binomial 99.9 % quantile at α.
    rng = np.random.default_rng(2024)
    alpha, runs, misses = 0.1, 200, 0
    for r in range(runs):
        a, b = (2, 5) if r % 2 else (0.5, 0.5)
        x = rng.beta(a, b, 150)
        lo, hi = betting_cs(x, alpha, breaks=400)
        mean = a / (a + b)
        misses += bool(((lo > mean) | (hi < mean)).any())
    assert misses <= binom.ppf(0.999, runs, alpha)
    # … and it is not vacuous: after 150 observations the interval is far narrower than [0, 1].
    assert np.median(hi - lo) < 0.3


def test_one_sided_bounds_cover_by_simulation():
    rng = np.random.default_rng(7)
    alpha, runs = 0.1, 300
    low = sum(lower_bound(rng.binomial(1, 0.3, 80).astype(float), alpha) > 0.3 for _ in range(runs))
    high = sum(upper_bound(rng.binomial(1, 0.3, 80).astype(float), alpha) < 0.3 for _ in range(runs))
    assert low <= binom.ppf(0.999, runs, alpha) and high <= binom.ppf(0.999, runs, alpha)
    assert lower_bound(np.full(80, 0.3), alpha) > 0.2  # tight when the data are


def test_bets_are_predictable():
    # The bet on observation t depends only on observations before t.
    x = np.random.default_rng(0).random(30)
    y = x.copy()
    y[10:] = 1 - y[10:]
    assert np.array_equal(predictable_bets(x, 0.05)[:11], predictable_bets(y, 0.05)[:11])
    assert not np.array_equal(predictable_bets(x, 0.05)[11:], predictable_bets(y, 0.05)[11:])


def _null_days(rng, n_days=90, per_day=50):
    return [rng.beta(8, 2, per_day) for _ in range(n_days)]


def test_no_false_alarm_under_no_change_within_the_bound():
    # P(any alarm in 90 windows) ≤ α = 0.05 per detector; with a fixed seed 40 null streams raise no
    # more than the binomial 99.9 % quantile (in practice none: the bound is conservative).
    rng = np.random.default_rng(11)
    runs = 40
    alarms = sum(bool(detect_changes(_null_days(rng))) for _ in range(runs))
    assert alarms <= binom.ppf(0.999, runs, 0.05)
    both = sum(bool(detect_changes(_null_days(rng), direction="both")) for _ in range(runs))
    assert both <= binom.ppf(0.999, runs, 0.05)


def test_the_detector_alone_keeps_its_half_of_alpha(monkeypatch):
    # The Ville step on its own: with the reference bound set to the true mean (no margin to spare) and a
    # loose α = 0.9, alarms within the horizon happen, at a rate within the detector's share α/2.
    monkeypatch.setattr(alerts, "lower_bound", lambda x, a: 0.8)  # Beta(8, 2) has mean 0.8
    rng = np.random.default_rng(12)
    runs, horizon = 400, 10
    alarms = sum(
        any(
            d.detected_at < 5 + horizon
            for d in detect_changes(
                _null_days(rng, 5 + horizon, 20), alpha=0.9, horizon=horizon, reference_windows=5
            )
        )
        for _ in range(runs)
    )
    assert 0 < alarms <= binom.ppf(0.999, runs, 0.45)


def test_detects_a_large_change_once_and_estimates_when():
    rng = np.random.default_rng(3)
    days = [rng.beta(8, 2, 50) for _ in range(30)] + [rng.beta(5, 3, 50) for _ in range(60)]
    found = detect_changes(days)
    assert len(found) == 1  # one change, one alert: after it the new reference is the changed level
    d = found[0]
    assert 30 <= d.detected_at <= 33
    assert d.since == 30
    assert d.direction == "down"
    assert d.statistic >= d.threshold == pytest.approx(90 / 0.025)
    assert d.before == pytest.approx(np.concatenate(days[:14]).mean())
    assert d.after < d.bound < d.before
    assert d.reference == (0, 13)


def test_a_second_change_raises_a_second_alert():
    rng = np.random.default_rng(4)
    days = (
        [rng.beta(8, 2, 50) for _ in range(30)]
        + [rng.beta(5, 3, 50) for _ in range(30)]
        + [rng.beta(2, 3, 50) for _ in range(30)]
    )
    found = detect_changes(days)
    assert [d.since for d in found] == [30, 60]
    assert found[1].reference[0] == found[0].detected_at + 1


def test_detection_uses_only_the_past():
    rng = np.random.default_rng(5)
    days = [rng.beta(8, 2, 50) for _ in range(30)] + [rng.beta(5, 3, 50) for _ in range(30)]
    full = detect_changes(days)
    assert detect_changes(days[: full[0].detected_at + 1]) == full
    assert detect_changes(days[: full[0].detected_at]) == ()


def test_rise_and_fall():
    rng = np.random.default_rng(6)
    days = [rng.beta(4, 4, 50) for _ in range(20)] + [rng.beta(5, 3, 50) for _ in range(20)]
    assert detect_changes(days, direction="down") == ()
    up = detect_changes(days, direction="up")
    assert len(up) == 1 and up[0].direction == "up"
    both = detect_changes(days, direction="both")
    assert len(both) == 1 and both[0].direction == "up"
    assert both[0].threshold == pytest.approx(2 * up[0].threshold)


def test_rejects_bad_input():
    with pytest.raises(ValueError):
        detect_changes([[1.5]])
    with pytest.raises(ValueError):
        detect_changes([[0.5]], direction="sideways")


def test_per_item_statistics():
    human = np.array([[4, 4, np.nan], [1, 5, 3], [np.nan, np.nan, np.nan]])
    assert item_agreement([4, 3, 2], human).tolist() == [1.0, 1.0]
    assert item_level(human).tolist() == [0.75, 0.5]
    # pairs (1,5), (1,3), (5,3): squared differences 16, 4, 4 → mean 8 → 1 − 8/16
    assert item_rater_agreement(human).tolist() == [1.0, 0.5]


def _stream(seed, *, judge_noise_after=0.51, shift_after=0.0, rating_sd_after=None, days=60, change=25):
    rng = np.random.default_rng(seed)
    model = StreamModel()
    effects = rng.normal(0, model.rater_sd, model.raters)
    human, judge = [], []
    for day in range(days):
        late = day >= change
        h, j = simulate_window(
            rng,
            50,
            3,
            judge_noise_after if late else 0.51,
            effects=effects,
            shift=shift_after if late else 0.0,
            rating_sd=rating_sd_after if late else None,
        )
        human.append(h)
        judge.append(j)
    return human, judge


def test_product_change_the_judge_follows_is_not_judge_drift():
    human, judge = _stream(1, shift_after=-0.5)
    alerts = stream_alerts(human, {"j": judge}, dimension="helpful")
    assert [(a.kind, a.judge) for a in alerts] == [("product_change", None)]
    a = alerts[0]
    assert a.dimension == "helpful" and a.detection.direction == "down"
    assert abs(a.since - 25) <= 2 and a.detected_at >= 25


def test_judge_drift_is_not_a_product_change():
    human, judge = _stream(2, judge_noise_after=1.5)
    alerts = stream_alerts(human, {"j": judge, "steady": _stream(2)[1]}, dimension="helpful")
    kinds = [(a.kind, a.judge) for a in alerts]
    assert kinds == [("judge_drift", "j")]
    assert alerts[0].detection.after < alerts[0].detection.before


def test_rater_drift():
    human, judge = _stream(3, rating_sd_after=1.2)
    kinds = {a.kind for a in stream_alerts(human, {"j": judge}, dimension="helpful")}
    assert "rater_drift" in kinds
    assert "product_change" not in kinds


def test_judge_windows_must_match():
    human, judge = _stream(4, days=20)
    with pytest.raises(ValueError):
        stream_alerts(human, {"j": judge[:-1]}, dimension="helpful")


def test_a_window_of_only_unscored_values_is_empty_and_warns_nothing():
    # A judge that scored none of a window's labelled traces gives only NaN there: the window counts as
    # empty, without numpy's all-NaN warning, and the values around it are read as before.
    rng = np.random.default_rng(3)
    days = [rng.beta(8, 2, 50) for _ in range(30)]
    with_gap = [*days[:20], np.full(50, np.nan), *days[20:]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert detect_changes(with_gap) == detect_changes(days[:20] + [np.array([])] + days[20:])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        detect_changes([np.array([np.nan, 1.5])])


def test_an_empty_early_window_changes_no_alert():
    # A stray backfilled trace dated long before the stream gives an early window nobody labelled. It must
    # not be one of the reference windows: there it shortened the reference to 13 windows of data, and
    # the restart after the first alert then raised a second one for the same change.
    rng = np.random.default_rng(3)
    days = [rng.beta(8, 2, 50) for _ in range(30)] + [rng.beta(5, 3, 50) for _ in range(60)]
    plain = detect_changes(days)
    stray = detect_changes([np.array([]), *days])
    assert len(stray) == len(plain) == 1
    shifted = [
        replace(d, detected_at=d.detected_at + 1, since=d.since + 1, reference=(1, d.reference[1] + 1))
        for d in plain
    ]
    assert list(stray) == shifted
    # Empty windows inside the monitoring are skipped too, and indices stay the caller's.
    gaps = [*days[:40], np.array([]), np.array([]), *days[40:]]
    assert [d.since for d in detect_changes(gaps)] == [d.since for d in plain]
    human, judge = _stream(1, shift_after=-0.5)
    blank = np.empty((0, human[0].shape[1]))
    alerts = stream_alerts([blank, *human], {"j": [np.empty(0), *judge]}, dimension="helpful")
    assert [(a.kind, a.since - 1) for a in alerts] == [
        (a.kind, a.since) for a in stream_alerts(human, {"j": judge}, dimension="helpful")
    ]
