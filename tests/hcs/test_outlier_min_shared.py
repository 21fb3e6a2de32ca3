"""Outlier flags need enough shared items: ρ and bias from a handful of items flag no one, and each
ρ comes with the n it rests on (checked against scipy)."""

import numpy as np
import pytest
from scipy.stats import spearmanr

from hcs.quality import behaviour_flags
from hcs.quality_rules import LOO_SPEARMAN_FLAG, MIN_SHARED_ITEMS
from hcs.scoring import annotator_quality, overall_per_annotation

DIMS = ["coherence", "relevance", "instruction_following", "safety_compliance", "fluency"]
W = np.array([0.4, 0.2, 0.2, 0.1, 0.1])


def _batch(n_reversed_items: int):
    """Five careful annotators on 40 items; a sixth rates ``n_reversed_items`` of them on a reversed scale."""
    rng = np.random.default_rng(7)
    n_items = 40
    truth = rng.integers(1, 6, size=n_items).astype(float)
    item, ann, score = [], [], []
    for a in range(5):
        for i in range(n_items):
            item.append(i), ann.append(a), score.append(np.clip(truth[i] + rng.integers(-1, 2), 1, 5))
    for i in range(n_reversed_items):
        item.append(i), ann.append(5), score.append(6 - truth[i])
    item, ann, score = np.array(item), np.array(ann), np.array(score, dtype=float)
    scores = np.repeat(score[:, None], 5, axis=1)
    rows = annotator_quality(
        item,
        ann,
        scores,
        overall_per_annotation(scores, W),
        dimensions=DIMS,
        annotator_names=list("abcdef"),
        n_items=n_items,
    )
    return rows, item, ann, score


@pytest.mark.parametrize("n", [3, 5, MIN_SHARED_ITEMS - 1])
def test_a_reversed_scale_on_few_shared_items_is_shown_with_its_n_but_not_flagged(n):
    rows, item, ann, score = _batch(n)
    f = rows[5]
    assert f.n_shared["overall"] == n and f.n_items == n
    others = np.array([score[(item == i) & (ann != 5)].mean() for i in range(n)])
    assert f.spearman_loo["coherence"] == pytest.approx(spearmanr(score[ann == 5], others).statistic)
    assert f.spearman_loo["overall"] < -0.5
    assert not f.outlier and f.reasons == ()
    assert [r.n_shared["overall"] for r in rows[:5]] == [40] * 5


def test_the_same_reversal_on_enough_shared_items_is_flagged():
    rows, *_ = _batch(MIN_SHARED_ITEMS)
    assert rows[5].n_shared["overall"] == MIN_SHARED_ITEMS
    assert rows[5].outlier and rows[5].reasons


def test_low_agreement_needs_the_minimum_of_shared_items():
    def low(n):
        return next(
            s
            for s in behaviour_flags(
                fast_share=None,
                straight_share=None,
                longest_run=0,
                loo_spearman=-1.0,
                gold_accuracy=None,
                loo_n=n,
            )
            if s.name == "low agreement"
        )

    assert not low(MIN_SHARED_ITEMS - 1).flagged and low(MIN_SHARED_ITEMS).flagged
    assert low(3).value == -1.0 and f"{MIN_SHARED_ITEMS} shared items" in low(3).rule
    assert low(MIN_SHARED_ITEMS).threshold == LOO_SPEARMAN_FLAG


def test_the_minimum_is_where_spearmans_critical_value_is_zar_s_0_648():
    """Zar (1972), Table 1: for n = 10 the two-sided 5 % critical value of ρ is 0.648; a Monte Carlo
    of ρ under independence (random orderings of 10 ranks) gives the same tail."""
    n = MIN_SHARED_ITEMS
    rng = np.random.default_rng(0)
    ranks = np.arange(1, n + 1)
    shuffled = rng.permuted(np.tile(ranks, (100_000, 1)), axis=1)
    rho = 1 - 6 * ((shuffled - ranks) ** 2).sum(axis=1) / (n * (n * n - 1))
    assert np.mean(np.abs(rho) >= 0.648) == pytest.approx(0.05, abs=0.004)
