"""hcs.quality: gold comparison, standing, behaviour signals and counts without some annotators,
against values worked out by hand and the reference libraries."""

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from hcs.agreement import counts_from_long, first_k_counts, fleiss_kappa
from hcs.quality import (
    BLOCK,
    OK,
    WARN,
    behaviour_flags,
    check_standing,
    compare_with_gold,
    count_cube,
    seconds_signals,
    straightlining,
    training_passed,
)


def test_gold_comparison_by_hand():
    # |4-5| + |2-5| + |3-3| = 4 over 3 dimensions: MAE 4/3; only relevance is more than 1 off.
    c = compare_with_gold({"c": 4, "r": 2, "i": 3}, {"c": 5, "r": 5, "i": 3}, tolerance=1)
    assert c.mae == pytest.approx(4 / 3)
    assert c.off == ("r",) and c.differences == {"c": -1, "r": -3, "i": 0}
    assert not c.passed
    assert compare_with_gold({"c": 4}, {"c": 5}, tolerance=1).passed
    assert not compare_with_gold({"c": 4}, {"c": 5}, tolerance=0).passed


def test_gold_flags_compare_only_the_caps_when_asked():
    c = compare_with_gold(
        {"i": 2},
        {"i": 2},
        flags=["prompt_ambiguous"],
        gold_flags=["ignores_hard_constraint"],
        compared_flags={"ignores_hard_constraint"},
    )
    assert c.flags_missing == ("ignores_hard_constraint",) and c.flags_extra == () and not c.passed
    # no gold flags given: flags are not compared
    assert compare_with_gold({"i": 2}, {"i": 2}, flags=["unsafe_suggestion"], gold_flags=None).passed


def test_an_unrated_gold_dimension_is_off():
    c = compare_with_gold({"c": 5}, {"c": 5, "r": 1}, tolerance=1)
    assert c.off == ("r",)
    assert c.mae == pytest.approx((0 + 2) / 2)  # unrated costs tolerance + 1


def test_training_pass_rule():
    assert training_passed([0.6, 0.8, 0.85], [True, True, True])  # mean 0.75 passes (≤)
    assert not training_passed([0.6, 0.8, 0.86], [True, True, True])
    assert not training_passed([0.0, 0.0], [True, False])  # a cap wrong fails whatever the MAE
    assert not training_passed([], [])


@pytest.mark.parametrize(
    ("passed", "failed", "expected"),
    [
        (0, 2, OK),  # fewer than 3 answered: nothing happens yet
        (3, 0, OK),
        (4, 1, OK),  # 80 % is not under 80 %
        (3, 1, WARN),
        (2, 2, WARN),  # 75 %, 50 % (not under 50 %)
        (1, 2, BLOCK),
        (0, 3, BLOCK),
    ],
)
def test_check_standing_thresholds(passed, failed, expected):
    assert check_standing(passed, failed, warn_below=0.8, block_below=0.5, min_answered=3) == expected


def test_seconds_signals():
    median, share = seconds_signals([1.0, 3.0, 8.0, 20.0, np.nan], minimum=5)
    assert median == pytest.approx(np.median([1, 3, 8, 20]))  # 5.5
    assert share == pytest.approx(0.5)
    assert seconds_signals([np.nan]) == (None, None)


def test_straightlining_share_and_longest_run():
    scores = np.array(
        [
            [3, 3, 3, 3, 3],
            [3, 3, 3, 3, 3],
            [3, 3, 3, 3, 3],
            [1, 2, 3, 4, 5],
            [1, 2, 3, 4, 5],
            [5, 5, 5, 5, np.nan],  # incomplete: not "all equal", breaks a run
            [2, 2, 2, 2, 2],
        ],
        dtype=float,
    )
    share, run = straightlining(scores)
    assert share == pytest.approx(4 / 7)
    assert run == 3
    assert straightlining(np.zeros((0, 5))) == (None, 0)


def test_behaviour_flags_show_their_thresholds():
    flags = {
        f.name: f
        for f in behaviour_flags(
            fast_share=0.9, straight_share=0.1, longest_run=6, loo_spearman=None, gold_accuracy=0.5
        )
    }
    assert flags["too fast"].flagged and flags["too fast"].rule == "> 0.5"
    assert not flags["straight-lining"].flagged
    assert flags["identical run"].flagged
    assert not flags["low agreement"].flagged  # undefined never flags
    assert flags["gold accuracy"].flagged and flags["gold accuracy"].threshold == 0.8


def test_count_cube_matches_counts_from_long_and_first_k():
    rng = np.random.default_rng(3)
    items = rng.integers(0, 6, size=40)
    scores = rng.integers(1, 6, size=40)
    keep = rng.random(40) > 0.3
    cube = count_cube(items, scores[:, None].astype(float), n_items=6, levels=[1, 2, 3, 4, 5], keep=keep)
    long = counts_from_long(items[keep], scores[keep], [1, 2, 3, 4, 5])
    present = np.unique(items[keep], return_index=True)
    order = present[0][np.argsort(present[1])]  # counts_from_long: first-seen order
    np.testing.assert_array_equal(cube[0][order], long)
    fk = count_cube(
        items, scores[:, None].astype(float), n_items=6, levels=[1, 2, 3, 4, 5], keep=keep, first_k=3
    )
    expected = first_k_counts(
        items[keep], scores[keep], [1, 2, 3, 4, 5], 3, order=np.arange(keep.sum())
    )  # rows in time order
    # the same multiset of rows (count_cube keeps item order, first_k_counts first-seen order)
    assert sorted(map(tuple, fk[0][fk[0].sum(axis=1) > 0])) == sorted(map(tuple, expected))


def test_count_cube_feeds_the_same_kappa_as_statsmodels():
    # 4 items × 3 raters; rater 2 excluded leaves 2 ratings per item.
    ratings = pd.DataFrame(
        {
            "item": np.repeat(np.arange(4), 3),
            "rater": np.tile([0, 1, 2], 4),
            "score": [1, 1, 5, 2, 2, 4, 3, 4, 1, 5, 5, 2],
        }
    )
    keep = ratings["rater"] != 2
    cube = count_cube(
        ratings["item"],
        ratings[["score"]].astype(float),
        n_items=4,
        levels=[1, 2, 3, 4, 5],
        keep=keep,
        first_k=2,
    )
    wide = ratings[keep].pivot(index="item", columns="rater", values="score").to_numpy()
    table, _ = aggregate_raters(wide, n_cat=None)
    assert fleiss_kappa(cube[0]) == pytest.approx(sm_fleiss_kappa(table), abs=1e-12)


def test_agreement_with_reference_by_hand():
    from hcs.quality import agreement_with_reference

    own = np.array([[4, 2, np.nan], [5, 5, 5]])
    ref = np.array([[4, 4, 3], [5, np.nan, 1]])
    # Compared cells: (4,4) (2,4) (5,5) (5,1): 2 of 4 equal; |diffs| 0 + 2 + 0 + 4 = 6 → MAE 1.5.
    assert agreement_with_reference(own, ref) == (2, 0.5, 1.5)
    assert agreement_with_reference(np.full((1, 2), np.nan), np.ones((1, 2))) == (0, None, None)
    with pytest.raises(ValueError, match="differ in shape"):
        agreement_with_reference(np.ones((1, 2)), np.ones((2, 2)))
