"""Position-swap probe for pairwise judges, on judges whose answer is known."""

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from hcs.calibration.position import position_probe, wilson


def _swapped(pairs, judge):
    """Both orders of every pair, the original order first; ``judge(first, second)`` gives the verdict."""
    calls = [(a, b, judge(a, b)) for a, b in pairs]
    return calls + [(b, a, judge(b, a)) for a, b in pairs]


PAIRS = [(f"a{i}", f"b{i}") for i in range(20)]


def test_judge_that_always_prefers_the_first_answer_has_consistency_zero():
    probe = position_probe(_swapped(PAIRS, lambda first, second: "baseline"), n_boot=200)
    assert probe.n_pairs == 20 and probe.n_decisive == 40
    assert probe.consistency == 0 and probe.first_preference == 1
    assert probe.consistency_ci95 == pytest.approx(proportion_confint(0, 20, method="wilson"))
    assert probe.first_preference_ci95 == (1.0, 1.0)
    assert probe.verdict_counts() == {"baseline": 0, "enhanced": 0, "tie": 0, "inconsistent": 20}


def test_judge_that_reads_content_is_fully_consistent_with_no_position_preference():
    better = {f"b{i}" for i in range(20)}  # the b response is always the better one
    probe = position_probe(
        _swapped(PAIRS, lambda first, second: "enhanced" if second in better else "baseline"), n_boot=200
    )
    assert probe.consistency == 1 and probe.first_preference == 0.5
    assert probe.verdict_counts() == {"baseline": 0, "enhanced": 20, "tie": 0, "inconsistent": 0}
    lo, hi = probe.first_preference_ci95
    assert lo == hi == 0.5  # every pair has one first and one second win: no resample varies


def test_hand_counted_mixture_with_ties():
    calls = [
        ("x", "y", "baseline"),
        ("y", "x", "enhanced"),  # x wins both orders: consistent
        ("p", "q", "tie"),
        ("q", "p", "tie"),  # tie both orders: consistent
        ("m", "n", "baseline"),
        ("n", "m", "baseline"),  # first wins both: inconsistent
        ("s", "t", "tie"),
        ("t", "s", "baseline"),  # tie then first: inconsistent
        ("u", "v", "baseline"),  # one order only: left out
    ]
    probe = position_probe(calls, n_boot=300)
    assert (probe.n_pairs, probe.n_consistent, probe.n_one_order) == (4, 2, 1)
    assert probe.consistency == 0.5
    assert probe.consistency_ci95 == pytest.approx(wilson(2, 4))
    # decisive verdicts: x>y(first), y<x(second), m(first), n(first), t(first) → 4 of 5 for the first answer
    assert probe.n_decisive == 5 and probe.first_preference == pytest.approx(0.8)
    assert probe.consistent_verdicts == (("x", "y", "baseline"), ("p", "q", "tie"))
    lo, hi = probe.first_preference_ci95
    assert 0 <= lo <= 0.8 <= hi <= 1


def test_random_judge_is_about_half_consistent():
    rng = np.random.default_rng(2)
    pairs = [(f"a{i}", f"b{i}") for i in range(400)]
    probe = position_probe(_swapped(pairs, lambda f, s: rng.choice(["baseline", "enhanced"])), n_boot=300)
    assert probe.consistency_ci95[0] < 0.5 < probe.consistency_ci95[1]
    assert probe.first_preference_ci95[0] < 0.5 < probe.first_preference_ci95[1]


def test_wilson_matches_the_formula():
    # Wilson (1927): centre (x + z²/2)/(n + z²), half-width z·sqrt(x(n−x)/n + z²/4)/(n + z²); x = 13, n = 20
    z = 1.959963984540054
    centre = (13 + z**2 / 2) / (20 + z**2)
    half = z * np.sqrt(13 * 7 / 20 + z**2 / 4) / (20 + z**2)
    assert wilson(13, 20) == pytest.approx((centre - half, centre + half))
    assert wilson(0, 0) == (None, None)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="is not one of"):
        position_probe([("a", "b", "first")])
    with pytest.raises(ValueError, match="appears twice"):
        position_probe([("a", "b", "tie"), ("a", "b", "tie")])
    with pytest.raises(ValueError, match="two different responses"):
        position_probe([("a", "a", "tie")])
    empty = position_probe([])
    assert (
        empty.consistency is None
        and empty.first_preference is None
        and empty.first_preference_ci95 == (None, None)
    )
