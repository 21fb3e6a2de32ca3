"""Judge bias probes: length bias and score use, on constructed data where the answer is known."""

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy import stats

from hcs.calibration.probes import FEW_LEVELS, length_bias, ols_coefficient, score_use


def _study(seed=3, n=120, per_1000=0.0, noise=0.3):
    """Items of random length; the judge is the human mean plus ``per_1000`` per 1,000 characters plus noise."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(200, 4000, size=n).astype(float)
    human_mean = rng.integers(3, 16, size=n) / 3.0  # means of three 1–5 ratings
    judge = human_mean + per_1000 * lengths / 1000 + rng.normal(0, noise, size=n)
    return lengths, judge, human_mean


def test_judge_that_adds_half_a_point_per_1000_chars_shows_its_coefficient():
    lengths, judge, human = _study(per_1000=0.5)
    probe = length_bias(lengths, judge, human, n_boot=400)
    per_1000 = probe.coef_per_1000_chars
    assert per_1000.ci95[0] < 0.5 < per_1000.ci95[1]
    assert per_1000.value == pytest.approx(0.5, abs=0.05)
    # the log-length coefficient is clearly positive, its CI excludes 0
    assert probe.coef.value > 0 and probe.coef.ci95[0] > 0
    # the residual grows with length; the human mean does not
    assert probe.spearman > 0.5 and probe.ci95[0] > 0.3
    assert abs(probe.human_spearman) < 0.2 and probe.human_ci95[0] < 0 < probe.human_ci95[1]


def test_unbiased_judge_has_coefficient_near_zero():
    lengths, judge, human = _study(per_1000=0.0)
    probe = length_bias(lengths, judge, human, n_boot=400)
    assert probe.coef.ci95[0] < 0 < probe.coef.ci95[1]
    assert probe.ci95[0] < 0 < probe.ci95[1]


def test_coefficients_match_statsmodels_formula_and_scipy():
    lengths, judge, human = _study(per_1000=0.3, seed=9, n=60)
    probe = length_bias(lengths, judge, human, n_boot=200)
    fit = smf.ols(
        "judge ~ human + np.log(length)",
        data=pd.DataFrame({"judge": judge, "human": human, "length": lengths}),
    ).fit()
    assert probe.coef.value == pytest.approx(fit.params["np.log(length)"], rel=1e-10)
    assert list(probe.coef.ci95) == pytest.approx(list(fit.conf_int().loc["np.log(length)"]), rel=1e-10)
    assert probe.coef.p_value == pytest.approx(fit.pvalues["np.log(length)"], rel=1e-8)
    assert probe.spearman == pytest.approx(stats.spearmanr(lengths, judge - human).statistic)
    assert probe.human_spearman == pytest.approx(stats.spearmanr(lengths, human).statistic)


def test_hand_computed_spearman_on_four_items():
    # lengths rank 1..4; residuals 0, 1, 0.5, 2 rank 1, 3, 2, 4: ρ = 1 − 6·Σd²/(n(n²−1)) = 1 − 6·2/60 = 0.8
    probe = length_bias([100, 200, 300, 400], [3, 4, 3.5, 5], [3, 3, 3, 3], n_boot=50)
    assert probe.spearman == pytest.approx(0.8)
    assert probe.human_spearman is None  # the human mean is constant: undefined, not 0
    assert probe.coef.value is None  # too few items for a coefficient with an interval


def test_length_is_not_bias_when_people_also_prefer_longer_answers():
    rng = np.random.default_rng(5)
    lengths = rng.integers(200, 4000, size=100).astype(float)
    human = np.clip(1 + lengths / 1000 + rng.normal(0, 0.3, size=100), 1, 5)
    judge = human + rng.normal(0, 0.3, size=100)  # tracks people, no extra length reward
    probe = length_bias(lengths, judge, human, n_boot=300)
    assert probe.human_spearman > 0.8
    assert probe.ci95[0] < 0 < probe.ci95[1]


def test_collinear_length_gives_no_coefficient():
    lengths = np.arange(1, 11) * 100.0
    human = lengths / 100.0  # length is the human mean, exactly
    assert ols_coefficient(human, human, lengths / 1000).value is None


def test_length_bias_refuses_bad_input():
    with pytest.raises(ValueError, match="one value per item"):
        length_bias([1, 2], [3], [3, 4])
    with pytest.raises(ValueError, match="at least 1 character"):
        length_bias([0, 2, 3], [3, 3, 3], [3, 4, 4])


def test_score_use_counts_levels_and_flags_a_two_level_judge():
    use = score_use([1, 5, 5, 1, 4.6, 1.2], [1, 2, 3, 4, 5, 3, 3, 2])
    assert use.levels == (1, 2, 3, 4, 5)
    assert use.judge_counts == (3, 0, 0, 0, 3)  # 4.6 → 5, 1.2 → 1
    assert use.human_counts == (1, 2, 3, 1, 1)
    assert use.levels_used == 2 and use.human_levels_used == 5
    assert FEW_LEVELS == 2 and use.few_levels
    assert use.shares(use.judge_counts) == (0.5, 0.0, 0.0, 0.0, 0.5)


def test_score_use_half_rounds_up_and_three_levels_are_not_flagged():
    use = score_use([2.5, 3.5, 1.0], [np.nan, 3, 3])
    assert use.judge_counts == (1, 0, 1, 1, 0)
    assert use.levels_used == 3 and not use.few_levels
    assert use.human_counts == (0, 0, 2, 0, 0)


def test_score_use_refuses_ratings_off_the_scale():
    with pytest.raises(ValueError, match="outside 1–5"):
        score_use([3], [6])


@pytest.mark.parametrize("seed,n", [(1, 5), (2, 6), (4, 12), (5, 40), (6, 300)])
def test_numpy_least_squares_matches_statsmodels_ols_on_small_and_large_samples(seed, n):
    from statsmodels.regression.linear_model import OLS

    rng = np.random.default_rng(seed)
    lengths, judge, human = _study(seed=seed, n=n, per_1000=float(rng.normal()), noise=0.5)
    for term in (np.log(lengths), lengths / 1000):
        mine = ols_coefficient(judge, human, term)
        fit = OLS(judge, np.column_stack([np.ones(n), human, term])).fit()
        assert mine.value == pytest.approx(fit.params[2], rel=1e-9, abs=1e-12)
        assert list(mine.ci95) == pytest.approx(list(fit.conf_int()[2]), rel=1e-9, abs=1e-12)
        assert mine.p_value == pytest.approx(fit.pvalues[2], rel=1e-7, abs=1e-14)


def test_a_noise_free_fit_matches_statsmodels_too():
    from statsmodels.regression.linear_model import OLS

    lengths = np.array([100.0, 900, 400, 2500, 1600, 3600])
    human = np.array([1.0, 2, 4, 3, 5, 2])
    judge = 0.5 + human + 0.25 * lengths / 1000
    coef = ols_coefficient(judge, human, lengths / 1000)
    fit = OLS(judge, np.column_stack([np.ones(6), human, lengths / 1000])).fit()
    assert coef.value == pytest.approx(0.25)
    lo, hi = fit.conf_int()[2]
    assert coef.ci95[0] == pytest.approx(lo, abs=1e-9) and coef.ci95[1] == pytest.approx(hi, abs=1e-9)
