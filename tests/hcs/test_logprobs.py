"""The score token's distribution, G-Eval's weighted score and the ECE of pointwise judges, against scipy and
scikit-learn."""

import math

import numpy as np
import pytest
from scipy import stats
from sklearn.calibration import calibration_curve

from hcs.calibration.logprobs import (
    distribution,
    integer_scale,
    pointwise_correct,
    pointwise_reliability,
    score_token,
)


def test_weighted_score_is_the_expectation_of_the_score_distribution():
    rng = np.random.default_rng(7)
    for _ in range(50):
        p = rng.dirichlet(np.ones(5))
        top = [(f" {s}", math.log(q)) for s, q in zip(range(1, 6), p)] + [("The", math.log(0.2))]
        d = distribution(top, range(1, 6))
        reference = stats.rv_discrete(values=(np.arange(1, 6), p / p.sum()))
        assert d.weighted == pytest.approx(reference.mean(), abs=1e-12)
        assert d.confidence == pytest.approx(p.max() / p.sum())
        assert d.mass == pytest.approx(p.sum())


def test_g_eval_breaks_ties_of_integer_scores():
    # Liu et al. (2023): two answers both scored 3 differ in how sure the model was
    sure = distribution([("3", math.log(0.9)), ("4", math.log(0.1))], range(1, 6))
    hesitant = distribution([("3", math.log(0.5)), ("4", math.log(0.5))], range(1, 6))
    assert sure.top == hesitant.top == 3
    assert sure.weighted == pytest.approx(3.1) and hesitant.weighted == pytest.approx(3.5)


def test_spellings_add_up_and_non_scores_are_ignored():
    d = distribution(
        [
            ("4", math.log(0.4)),
            (" 4", math.log(0.2)),
            ('"5', math.log(0.2)),
            ("6", math.log(0.1)),
            ("four", math.log(0.1)),
        ],
        range(1, 6),
    )
    assert dict(d.probabilities) == pytest.approx({4: 0.75, 5: 0.25})
    assert d.probability(4) == pytest.approx(0.75) and d.probability(2) == 0.0 and d.probability(4.5) == 0.0
    assert distribution([("yes", 0.0)], range(1, 6)) is None
    assert distribution([], range(1, 6)) is None


def test_only_integer_scales_have_score_tokens():
    assert integer_scale(1, 4) == (1, 2, 3, 4)
    assert integer_scale(0, 1) is None and integer_scale(0.5, 5) is None and integer_scale(0, 100) is None


def test_the_score_token_is_the_one_after_the_key_not_a_number_in_the_reason():
    tokens = [
        '{"',
        "score",
        '":',
        " 2",
        ",",
        ' "',
        "reason",
        '":',
        ' "',
        "Step",
        " 2",
        " is",
        " missing",
        '"}',
    ]
    assert score_token(tokens, 2, key="score") == 3  # not the later "2" of the reason
    plain = ["Reason", ":", " 4", " steps", ".", "\n", "Score", ":", " 4"]
    assert score_token(plain, 4, key="score") == 8
    assert score_token(plain, 3, key="score") is None
    assert score_token(plain, 0.5) is None


def test_pointwise_ece_matches_scikit_learns_calibration_curve():
    rng = np.random.default_rng(3)
    n = 400
    confidence = rng.uniform(0.2, 1.0, n)
    human = rng.uniform(1, 5, n)
    given = np.where(rng.uniform(size=n) < confidence, np.round(human), np.clip(np.round(human) + 2, 1, 5))
    right = pointwise_correct(given, human, step=1.0)
    ours = pointwise_reliability(confidence, given, human, step=1.0, n_bins=10)
    accuracy, mean_conf = calibration_curve(right, confidence, n_bins=10, strategy="uniform")
    counts = np.histogram(confidence, bins=np.linspace(0, 1, 11))[0]
    counts = counts[counts > 0]
    reference = float(np.sum(counts / n * np.abs(accuracy - mean_conf)))
    assert ours.n == n
    assert ours.ece == pytest.approx(reference, abs=1e-12)


def test_items_without_a_human_mean_or_a_confidence_are_left_out():
    r = pointwise_reliability([0.9, np.nan, 0.8], [4, 4, 2], [4.2, 4.0, np.nan], step=1.0)
    assert r.n == 1 and r.ece == pytest.approx(0.1)
    # a 1–4 judge on a 1–5 rubric: one judge point is 4/3 rubric points
    assert pointwise_correct([3 + 1 / 3], [4.0], step=4 / 3).tolist() == [True]
    assert pointwise_correct([3 + 1 / 3], [4.1], step=4 / 3).tolist() == [False]
