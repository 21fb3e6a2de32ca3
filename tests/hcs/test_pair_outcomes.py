"""Pairs counted once under the swap, and the Wilson interval of the agreement, against scipy."""

from __future__ import annotations

import pytest
from scipy.stats import binomtest

from hcs.calibration import compare_verdicts
from hcs.calibration.pairwise import pair_outcomes, wilson


@pytest.mark.parametrize(("k", "n"), [(0, 5), (3, 7), (8, 10), (60, 60), (41, 120)])
def test_wilson_matches_scipy(k, n):
    reference = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    assert wilson(k, n) == pytest.approx((reference.low, reference.high), abs=1e-12)


def test_wilson_published_value():
    # Newcombe (1998), Statistics in Medicine 17, 857-872, Table I, example (a): 81/263 → 0.2553 to 0.3662.
    lo, hi = wilson(81, 263)
    assert (round(lo, 4), round(hi, 4)) == (0.2553, 0.3662)
    assert wilson(0, 0) == (None, None)


def test_compare_verdicts_carries_the_agreement_interval():
    judge = ["enhanced"] * 7 + ["tie"] * 3
    human = ["enhanced"] * 6 + ["baseline"] * 4
    result = compare_verdicts(judge, human)
    assert result.agreement == 0.6
    reference = binomtest(6, 10).proportion_ci(method="wilson")
    assert result.agreement_ci95 == pytest.approx((reference.low, reference.high))


def test_each_pair_once_in_the_run_orientation():
    verdicts = [
        ("b1", "e1", "enhanced", False, 0.9),
        ("e1", "b1", "baseline", True, 0.7),  # e1 wins both: consistent
        ("b2", "e2", "baseline", False, 0.8),
        ("e2", "b2", "baseline", True, 0.6),  # first shown wins: a tie
        ("b3", "e3", "tie", False, None),
        ("e3", "b3", "tie", True, None),  # two ties agree
        ("e4", "b4", "enhanced", True, 0.5),  # swapped order only: b4 (shown second) won
        ("b5", "e5", "baseline", False, None),
    ]
    pairs = pair_outcomes(verdicts)
    assert [(p.baseline, p.enhanced, p.outcome, p.both_orders, p.consistent) for p in pairs] == [
        ("b1", "e1", "enhanced", True, True),
        ("b2", "e2", "tie", True, False),
        ("b3", "e3", "tie", True, True),
        ("b4", "e4", "baseline", False, None),
        ("b5", "e5", "baseline", False, None),
    ]
    assert pairs[0].confidence == pytest.approx(0.8) and pairs[2].confidence is None


def test_an_order_twice_is_refused():
    with pytest.raises(ValueError, match="appears twice in the same order"):
        pair_outcomes([("a", "b", "tie", False, None), ("a", "b", "tie", False, None)])
    with pytest.raises(ValueError, match="not one of"):
        pair_outcomes([("a", "b", "first", False, None)])
