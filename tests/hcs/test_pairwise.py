"""Pairwise verdicts against the human preference."""

import numpy as np
import pytest
from statsmodels.stats.inter_rater import cohens_kappa as sm_kappa

from hcs.calibration import compare_verdicts, human_preference
from hcs.calibration.pairwise import OUTCOMES, cohen_kappa


def test_human_preference_margin():
    assert human_preference(3.0, 3.3) == "enhanced"
    assert human_preference(3.3, 3.0) == "baseline"
    assert human_preference(3.0, 3.2) == "tie"
    assert human_preference(3.0, 3.2, tie_margin=0.1) == "enhanced"


def test_kappa_matches_statsmodels():
    rng = np.random.default_rng(0)
    a = rng.choice(OUTCOMES, 90)
    b = np.where(rng.random(90) < 0.6, a, rng.choice(OUTCOMES, 90))
    table = np.zeros((3, 3))
    for x, y in zip(a, b):
        table[OUTCOMES.index(x), OUTCOMES.index(y)] += 1
    assert cohen_kappa(list(a), list(b)) == pytest.approx(sm_kappa(table).kappa, abs=1e-12)


def test_compare_verdicts_by_hand():
    judge = ["enhanced", "enhanced", "baseline", "tie", "enhanced"]
    human = ["enhanced", "baseline", "baseline", "enhanced", "enhanced"]
    confidence = [0.9, 0.85, 0.5, None, 0.95]
    result = compare_verdicts(judge, human, confidence)
    assert result.n == 5
    assert result.agreement == pytest.approx(3 / 5)
    # Confident (≥ 0.8): items 1, 2, 5 → right, wrong, right.
    assert result.n_confident == 3
    assert result.confident_accuracy == pytest.approx(2 / 3)
    # p_o = 0.6; judge marginals (b 1, e 3, t 1), human (b 2, e 3, t 0): p_e = (2 + 9 + 0) / 25.
    assert result.kappa == pytest.approx((0.6 - 11 / 25) / (1 - 11 / 25))
    assert result.table[OUTCOMES.index("enhanced")][OUTCOMES.index("tie")] == 1


def test_compare_verdicts_rejects_unknown_labels():
    with pytest.raises(ValueError, match="verdict 'both' is not one of"):
        compare_verdicts(["both"], ["tie"])


def test_no_confident_verdicts():
    result = compare_verdicts(["tie"], ["tie"], [0.2])
    assert result.n_confident == 0 and result.confident_accuracy is None


def test_kappa_published_example():
    # Two readers, 50 proposals: both yes 20, A yes B no 5, A no B yes 10, both no 15.
    # p_o = 0.7, p_e = 0.5·0.6 + 0.5·0.4 = 0.5, κ = 0.4 (the textbook example of Cohen's κ).
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert cohen_kappa(a, b, categories=("yes", "no")) == pytest.approx(0.4, abs=1e-12)


def test_kappa_undefined_is_nan():
    assert np.isnan(cohen_kappa([], []))
    assert np.isnan(cohen_kappa(["tie", "tie"], ["tie", "tie"]))  # chance agreement is 1
