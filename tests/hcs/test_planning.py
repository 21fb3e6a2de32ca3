"""The study planner: predictions checked against studies simulated from the same population."""

import math

import numpy as np
import pytest

from hcs.agreement import dimension_agreement
from hcs.planning import (
    _counts,
    alt_test_items_for_power,
    items_for_width,
    plan_agreement,
    plan_mean,
    ppi_labels_for_width,
    simulate_ratings,
)
from hcs.ppi import ppi_mean

CATS = [1, 2, 3, 4, 5]


def _population(rng, n_items, k):
    """Items with a true quality; each rater is off by at most one level."""
    quality = rng.integers(1, 6, size=n_items)
    return np.clip(quality[:, None] + rng.integers(-1, 2, size=(n_items, k)), 1, 5).astype(float)


def test_items_for_width():
    assert items_for_width(100, 0.2, 0.1) == 400
    assert items_for_width(100, 0.2, 0.4) == 25
    assert items_for_width(100, None, 0.1) is None and items_for_width(100, 0.2, None) is None


def test_simulated_ratings_come_from_the_item_without_replacement():
    rng = np.random.default_rng(0)
    pilot = np.array([[1, 2, 3, np.nan], [4, 4, np.nan, np.nan], [5, np.nan, np.nan, np.nan]])
    out = simulate_ratings(pilot, 500, 2, rng)
    for row in out:
        assert sorted(row) in ([1, 2], [1, 3], [2, 3], [4, 4])  # the single-rating item is never drawn
    three = simulate_ratings(pilot, 200, 3, rng)
    firsts = three[np.isin(three[:, 0], [1, 2, 3])]
    assert all(sorted(r) == [1, 2, 3] for r in firsts)  # enough ratings: all three, each once
    with pytest.raises(ValueError, match="at least twice"):
        simulate_ratings([[1, np.nan]], 5, 2, rng)


def test_agreement_widths_match_a_full_study_from_the_same_population():
    rng = np.random.default_rng(11)
    pilot = _population(rng, 150, 3)
    plan = plan_agreement(pilot, CATS, n_items=1200, k=3, target_width=0.03, seed=1)
    full = _population(np.random.default_rng(12), 1200, 3)
    table = _counts(full, CATS)
    actual = dimension_agreement(table, table, CATS, k=3, n_resamples=1000, seed=3)
    for key, attr in (
        ("fleiss_kappa", "fleiss_kappa_ci95"),
        ("krippendorff_alpha_interval", "alpha_interval_ci95"),
        ("gwet_ac2", "gwet_ac2_ci95"),
    ):
        lo, hi = getattr(actual, attr)
        assert plan[key].predicted_ci95_width == pytest.approx(hi - lo, rel=0.2), key
        assert plan[key].items_for_target == math.ceil(
            1200 * (plan[key].predicted_ci95_width / 0.03) ** 2 - 1e-9
        )
    with pytest.raises(ValueError, match="at least 2"):
        plan_agreement(pilot, CATS, n_items=100, k=1)


def test_more_annotators_per_item_narrow_the_mean_as_the_variance_components_say():
    rng = np.random.default_rng(2)
    pilot = rng.normal(3, 0.6, size=(300, 1)) + rng.normal(0, 0.9, size=(300, 5))
    for k in (1, 2, 5):
        expected = 2 * 1.959964 * math.sqrt(0.36 + 0.81 / k) / math.sqrt(1000)
        assert plan_mean(pilot, n_items=1000, k=k, n_sims=50).predicted_ci95_width == pytest.approx(
            expected, rel=0.12
        )


def test_ppi_labels_reach_the_width_on_a_fresh_study():
    rng = np.random.default_rng(4)

    def study(n, big_n):
        y = rng.normal(3, 1, size=n + big_n)
        f = 3 + 0.8 * (y - 3) + 0.6 * rng.normal(size=n + big_n)
        return y[:n], f[:n], f[n:]

    n = ppi_labels_for_width(*study(150, 2000), n_items=5000, width=0.12)
    assert n is not None and 100 < n < 5000
    widths = [
        ppi_mean(*study(n, 5000 - n)).superpopulation_width for _ in range(30)
    ]  # the planner predicts this one
    assert np.mean(widths) == pytest.approx(0.12, rel=0.1)
    assert (
        ppi_labels_for_width(*study(150, 2000), n_items=200, width=0.01) is None
    )  # not reachable with 200 items


def test_alt_test_power():
    rng = np.random.default_rng(5)
    truth = rng.integers(1, 6, size=200)
    human = {
        i: {a: float(np.clip(t + rng.integers(-1, 2), 1, 5)) for a in range(3)} for i, t in enumerate(truth)
    }
    good = {i: float(t) for i, t in enumerate(truth)}  # the judge knows the truth: beats every annotator
    noise = {i: float(rng.integers(1, 6)) for i in range(200)}
    n = alt_test_items_for_power(human, good, epsilon=0.2, n_sims=20)
    assert n is not None and n <= 100
    assert alt_test_items_for_power(human, noise, epsilon=0.2, grid=(30, 100), n_sims=10) is None
