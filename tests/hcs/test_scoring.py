"""hcs.scoring: overall HCS, systems ranked, annotator quality, disagreement list."""

import numpy as np
import pytest
from scipy.stats import spearmanr

from hcs.rubric import Rubric
from hcs.scoring import (
    annotator_quality,
    item_summaries,
    overall_per_annotation,
    rank_systems,
    widest_spread,
)

DIMS = ["coherence", "relevance", "instruction_following", "safety_compliance", "fluency"]
W = np.array([0.4, 0.2, 0.2, 0.1, 0.1])


def test_overall_matches_the_rubric_formula():
    rubric = Rubric.default()
    rows = np.array([[5, 4, 3, 2, 1], [2, 2, 1, 3, 3]], dtype=float)
    expected = [rubric.overall(dict(zip(DIMS, row))) for row in rows]
    assert overall_per_annotation(rows, np.array([rubric.weights[d] for d in DIMS])).tolist() == expected
    assert expected == [3.7, 2.0]  # 0.4·5+0.2·4+0.2·3+0.1·2+0.1·1; the guideline's bad example


def test_overall_is_nan_when_a_dimension_is_unrated():
    assert np.isnan(overall_per_annotation(np.array([[5, np.nan, 5, 5, 5]]), W)[0])


def test_item_summaries_mean_and_sample_sd():
    s = item_summaries(np.array([0, 0, 0, 1, 2]), np.array([1.0, 2.0, 3.0, 4.0, np.nan]), n_items=3)
    assert s.mean[0] == 2.0 and s.sd[0] == pytest.approx(1.0) and s.n.tolist() == [3, 1, 0]
    assert np.isnan(s.sd[1]) and np.isnan(s.mean[2])


def test_systems_ranked_by_mean_with_seeded_ci():
    means = np.array([4.0, 4.5, 5.0, 2.0, 2.5, 3.0, np.nan])
    system = np.array([0, 0, 0, 1, 1, 1, 1])
    ranked = rank_systems(means, system, ["base", "tuned"])
    assert [s.system for s in ranked] == ["base", "tuned"]
    assert ranked[0].mean == pytest.approx(4.5) and ranked[0].rank == 1 and ranked[0].n_items == 3
    assert ranked[1].n_items == 3  # the unrated item is not counted
    lo, hi = ranked[0].ci95
    assert 4.0 <= lo <= 4.5 <= hi <= 5.0
    assert rank_systems(means, system, ["base", "tuned"]) == ranked  # seeded


def test_annotator_bias_spearman_and_outlier():
    rng = np.random.default_rng(0)
    n_items, n_ann = 60, 5
    truth = rng.integers(1, 6, size=n_items).astype(float)
    item = np.repeat(np.arange(n_items), n_ann)
    ann = np.tile(np.arange(n_ann), n_items)
    noise = rng.integers(-1, 2, size=len(item))
    score = np.clip(truth[item] + noise, 1, 5).astype(float)
    score[ann == 4] = np.clip(6 - truth[item[ann == 4]], 1, 5)  # annotator 4 reverses the scale
    scores = np.repeat(score[:, None], 5, axis=1)
    overall = overall_per_annotation(scores, W)
    rows = annotator_quality(
        item, ann, scores, overall, dimensions=DIMS, annotator_names=list("abcde"), n_items=n_items
    )
    assert [r.n_items for r in rows] == [60] * 5
    assert [r.outlier for r in rows] == [False, False, False, False, True]
    assert rows[4].spearman_loo["overall"] < 0 < rows[0].spearman_loo["overall"]
    # Bias and Spearman against the others' mean, computed the slow way for annotator 0.
    mine = ann == 0
    others = np.array([score[(item == i) & (ann != 0)].mean() for i in range(n_items)])
    assert rows[0].bias["coherence"] == pytest.approx((score[mine] - others).mean())
    assert rows[0].spearman_loo["coherence"] == pytest.approx(spearmanr(score[mine], others).statistic)
    assert rows[0].mean["coherence"] == pytest.approx(score[mine].mean())


def test_constant_bias_is_flagged_with_a_reason():
    item = np.repeat(np.arange(10), 3)
    ann = np.tile(np.arange(3), 10)
    score = np.where(ann == 2, 5.0, 3.0)
    scores = np.repeat(score[:, None], 5, axis=1)
    rows = annotator_quality(
        item,
        ann,
        scores,
        overall_per_annotation(scores, W),
        dimensions=DIMS,
        annotator_names=["x", "y", "z"],
        n_items=10,
    )
    assert rows[2].outlier and "+2.00 points" in rows[2].reasons[0]
    assert rows[2].spearman_loo["overall"] is None  # no variation: undefined, not NaN


def test_widest_spread_orders_by_range_then_sd():
    counts = np.array([[1, 0, 0, 0, 2], [0, 3, 0, 0, 0], [1, 0, 1, 0, 1], [0, 1, 1, 1, 0]])
    rows = widest_spread(counts, np.array([10, 11, 12, 13]), [1, 2, 3, 4, 5], "coherence", limit=3)
    assert [(d.item, d.spread) for d in rows] == [
        (10, 4),
        (12, 4),
        (13, 2),
    ]  # 1,5,5 has a larger SD than 1,3,5
    assert rows[1].distribution == (1, 0, 1, 0, 1)


def _spearman(x, y):
    """Spearman's ρ as annotator_quality computes it: value codes, then ranks from the codes."""
    from hcs.scoring import _codes, _spearman_coded

    return _spearman_coded(*_codes(np.asarray(x, dtype=float)), *_codes(np.asarray(y, dtype=float)))


def test_spearman_equals_scipy_with_ties():
    rng = np.random.default_rng(3)
    x = rng.integers(1, 6, size=300).astype(float)
    y = np.clip(x + rng.normal(0, 1.2, size=300), 1, 5).round(1)
    assert _spearman(x, y) == pytest.approx(spearmanr(x, y).statistic, abs=1e-12)


def test_spearman_equals_scipy_on_whole_numbers_with_gaps():
    x = np.array([1, 5, 5, 2, 9, 1, 5, 2], dtype=float)
    y = np.array([2, 4, 5, 1, 5, 2, 3, 2.5])
    assert _spearman(x, y) == pytest.approx(spearmanr(x, y).statistic, abs=1e-12)
