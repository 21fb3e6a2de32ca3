"""Prediction-powered rank-sets: the estimator and covariance restated by hand, the rank-set rule on a worked
example, and by simulation coverage of the true ranking at level 1 − α and smaller sets than people alone."""

import numpy as np
import pytest
from scipy.stats import chi2

from hcs.ranking.battles import battles
from hcs.ranking.ppr import judge_credit, prediction_powered_ranking, rank_sets
from hcs.ranking.simulate import judged_battles, true_win_rates

PLANTED = np.linspace(-1.0, 1.0, 10)


def test_rank_sets_on_a_worked_example():
    # χ²₃(0.95) = 7.8147: with variances 1e-3 a gap must exceed √(7.8147 · 0.002) = 0.125 to separate two systems.
    assert np.sqrt(chi2.ppf(0.95, 3) * 0.002) == pytest.approx(0.12502, abs=1e-5)
    low, high = rank_sets([0.6, 0.5, 0.4], np.diag([1e-3] * 3))
    assert (low.tolist(), high.tolist()) == ([1, 1, 2], [2, 3, 3])
    low, high = rank_sets([0.6, 0.5, 0.4], np.diag([1e-4] * 3))
    assert (low.tolist(), high.tolist()) == ([1, 2, 3], [1, 2, 3])


def _by_hand(bt, credit_a):
    """Each system's mean credit and, per system, the summed squared residuals over its battles squared."""
    k = bt.n_systems
    rate, var = np.zeros(k), np.zeros(k)
    for m in range(k):
        values = np.concatenate([credit_a[bt.a == m], 1 - credit_a[bt.b == m]])
        rate[m] = values.mean()
        var[m] = ((values - rate[m]) ** 2).sum() / len(values) ** 2
    return rate, var


def test_the_estimator_and_its_covariance_restated_by_hand():
    rng = np.random.default_rng(1)
    human, yhat, judge, xu = judged_battles(rng, PLANTED[:5], 300, 2000)
    lam = 0.7
    r = prediction_powered_ranking(human, yhat, judge, xu, lam=lam)
    y = human.credit_a()
    h_rate, h_var = _by_hand(human, y)
    j_rate, _ = _by_hand(human, yhat)
    u_rate, u_var = _by_hand(judge, xu)
    np.testing.assert_allclose(r.theta, lam * u_rate + h_rate - lam * j_rate, atol=1e-12)
    np.testing.assert_allclose(r.human_theta, h_rate, atol=1e-12)
    np.testing.assert_allclose(np.diag(r.human_sigma), h_var, atol=1e-15)
    # The rectifier's variance is that of (human − λ·judge) credits, per system.
    rect = np.zeros(5)
    for m in range(5):
        v = np.concatenate([(y - lam * yhat)[human.a == m], ((1 - y) - lam * (1 - yhat))[human.b == m]])
        rect[m] = ((v - v.mean()) ** 2).sum() / len(v) ** 2
    np.testing.assert_allclose(np.diag(r.sigma), rect + lam**2 * u_var, atol=1e-15)
    assert np.allclose(r.sigma, r.sigma.T)


def test_two_systems_have_opposite_win_rates_and_covariance():
    bt = battles(range(6), [0, 0, 1, 0, 1, 0], [1, 1, 0, 1, 0, 1], ["a", "a", "a", "tie", "b", "b"])
    r = prediction_powered_ranking(bt, bt.credit_a())
    assert r.human_theta.sum() == pytest.approx(1.0)
    assert r.human_sigma[0, 1] == pytest.approx(-r.human_sigma[0, 0])
    assert r.lam == 0.0  # no judge-only battles: nothing to add to the people's verdicts
    out = r.to_json()
    assert out[0]["rank_set"] == list(r.rank_set(0)) and out[0]["human_only"]["win_rate"] == r.human_theta[0]


def test_lambda_follows_the_judges_worth():
    rng = np.random.default_rng(2)
    human, _, judge, _ = judged_battles(rng, PLANTED[:5], 400, 4000)
    good = prediction_powered_ranking(human, human.credit_a(), judge, judge.credit_a())
    noise = prediction_powered_ranking(human, rng.random(len(human)), judge, rng.random(len(judge)))
    assert good.lam > 0.85 and noise.lam < 0.15


def _simulate(n_sims, seed, alpha=0.05):
    rng = np.random.default_rng(seed)
    theta = true_win_rates(PLANTED)
    truth = 1 + (theta[None, :] > theta[:, None]).sum(1)
    covered = human_covered = 0
    sizes, human_sizes = [], []
    for _ in range(n_sims):
        r = prediction_powered_ranking(*judged_battles(rng, PLANTED, 200, 5000), alpha=alpha)
        covered += ((r.rank_low <= truth) & (truth <= r.rank_high)).all()
        human_covered += ((r.human_rank_low <= truth) & (truth <= r.human_rank_high)).all()
        sizes.append((r.rank_high - r.rank_low + 1).mean())
        human_sizes.append((r.human_rank_high - r.human_rank_low + 1).mean())
    return covered / n_sims, human_covered / n_sims, np.mean(sizes) / np.mean(human_sizes)


def test_rank_sets_cover_and_are_smaller_than_from_people_alone():
    coverage, human_coverage, ratio = _simulate(60, seed=3)
    assert coverage >= 0.9 and human_coverage >= 0.9
    assert ratio <= 0.8


@pytest.mark.slow
def test_rank_sets_cover_in_500_simulations():
    coverage, human_coverage, ratio = _simulate(500, seed=4)
    assert coverage >= 0.95 and human_coverage >= 0.95
    assert ratio <= 0.8


def test_judge_credit_averages_both_orders():
    assert judge_credit(["a", "b", "tie", "both_bad"], ["a", "a", "b", "tie"]).tolist() == [
        1.0,
        0.5,
        0.25,
        0.5,
    ]
    with pytest.raises(ValueError, match="2 and 1"):
        judge_credit(["a", "b"], ["a"])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"judge_on_human": [0.5]}, "4 human battles but 1"),
        ({"judge_on_human": [0.5, 2.0, 0.5, 0.5]}, r"\[0, 1\]"),
        ({"lam": 1.5}, "lam must lie"),
    ],
)
def test_bad_input_is_refused(kwargs, message):
    bt = battles(range(4), [0, 1, 0, 1], [1, 0, 1, 0], ["a", "b", "tie", "a"])
    args = {"judge_on_human": [0.5] * 4, **kwargs}
    with pytest.raises(ValueError, match=message):
        prediction_powered_ranking(bt, args.pop("judge_on_human"), **args)


def test_a_system_without_human_battles_is_refused():
    bt = battles(range(3), [0, 1, 0], [1, 0, 1], ["a", "b", "a"], n_systems=3)
    with pytest.raises(ValueError, match="system 2 has fewer than 2 human battles"):
        prediction_powered_ranking(bt, [0.5] * 3)
