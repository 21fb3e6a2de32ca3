"""Judge calibration: correlations, κ, confusion, ceiling, α — against direct computations and references."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.inter_rater import cohens_kappa

from hcs.calibration import (
    bootstrap_ci,
    calibrate_judge,
    confusion_matrix,
    human_ceiling,
    quadratic_weighted_kappa,
    round_half_up,
)
from hcs.calibration.metrics import alpha_with_and_without_judge
from tests.hanna import HANNA_DIR as HANNA


def _ranks(values):
    """Average ranks, written out (ties share the mean of their positions)."""
    values = list(values)
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def _pearson(x, y):
    mx, my = sum(x) / len(x), sum(y) / len(y)
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    return sxy / math.sqrt(sum((a - mx) ** 2 for a in x) * sum((b - my) ** 2 for b in y))


def _small_study(seed=1, n_items=40, n_annotators=3):
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, size=n_items)
    human = {
        f"i{i}": {f"a{a}": int(np.clip(truth[i] + rng.integers(-1, 2), 1, 5)) for a in range(n_annotators)}
        for i in range(n_items)
    }
    judge = {f"i{i}": float(np.clip(truth[i] + rng.normal(0, 0.7), 1, 5)) for i in range(n_items)}
    return human, judge


def test_round_half_up():
    assert round_half_up([2.5, 3.5, 1.49, 4.5]).tolist() == [3.0, 4.0, 1.0, 5.0]


def test_correlations_match_direct_computation():
    human, judge = _small_study()
    result = calibrate_judge(human, judge, n_boot=200)
    items = list(human)
    mean = [sum(human[i].values()) / 3 for i in items]
    j = [judge[i] for i in items]
    assert result.n == 40
    assert result.spearman == pytest.approx(_pearson(_ranks(j), _ranks(mean)), abs=1e-12)
    assert result.pearson == pytest.approx(_pearson(j, mean), abs=1e-12)
    assert result.kendall == pytest.approx(stats.kendalltau(j, mean).statistic, abs=1e-12)
    assert result.mae == pytest.approx(sum(abs(a - b) for a, b in zip(j, mean)) / 40)
    assert result.bias == pytest.approx(sum(a - b for a, b in zip(j, mean)) / 40)
    lo, hi = result.spearman_ci95
    assert lo < result.spearman < hi
    assert not result.possibly_inverted


def test_inverted_judge_is_flagged():
    human, judge = _small_study()
    flipped = {i: 6 - v for i, v in judge.items()}
    result = calibrate_judge(human, flipped, n_boot=50)
    assert result.spearman < 0
    assert result.possibly_inverted


def test_random_judges_on_a_dozen_items_are_not_called_inverted():
    # A judge that ignores the items: on n = 12 its ρ is negative about half the time, but its 95% CI
    # almost always spans 0, and only a CI below 0 is evidence that the scale runs the wrong way.
    rng = np.random.default_rng(12)
    negative = flagged = 0
    for _ in range(40):
        human = {i: {a: int(rng.integers(1, 6)) for a in "abc"} for i in range(12)}
        judge = {i: float(rng.integers(1, 6)) for i in range(12)}
        result = calibrate_judge(human, judge, n_boot=300)
        negative += result.spearman is not None and result.spearman < 0
        flagged += result.possibly_inverted
        if result.possibly_inverted:
            assert result.spearman_ci95[1] < 0
    assert negative >= 10  # the old rule (ρ < 0) would have flagged all of these
    assert flagged <= 4  # about 5% by construction of a 95% interval


def test_vectorised_spearman_bootstrap_equals_the_loop():
    human, judge = _small_study()
    x = np.array([judge[i] for i in human])
    y = np.array([np.mean(list(human[i].values())) for i in human])
    fast = bootstrap_ci(x, y, "spearman", n_boot=300, seed=7)
    slow = bootstrap_ci(x, y, lambda a, b: stats.spearmanr(a, b).statistic, n_boot=300, seed=7)
    assert fast == pytest.approx(slow, abs=1e-12)


def test_vectorised_kendall_bootstrap_equals_the_scipy_loop():
    # Discrete values (human means in thirds, judge in tenths): the contingency-table path.
    rng = np.random.default_rng(4)
    y = rng.integers(3, 16, 200) / 3
    x = np.round(np.clip(y / 5 + rng.normal(0, 0.2, 200), 0, 1), 1)
    fast = bootstrap_ci(x, y, "kendall", n_boot=300, seed=3)
    slow = bootstrap_ci(x, y, lambda a, b: stats.kendalltau(a, b).statistic, n_boot=300, seed=3)
    assert fast == pytest.approx(slow, abs=1e-12)


def test_kendall_bootstrap_falls_back_for_continuous_values():
    rng = np.random.default_rng(5)
    x, y = rng.normal(size=80), rng.normal(size=80)  # 6,400 value pairs: too many for tables
    fast = bootstrap_ci(x, y, "kendall", n_boot=100, seed=1)
    slow = bootstrap_ci(x, y, lambda a, b: stats.kendalltau(a, b).statistic, n_boot=100, seed=1)
    assert fast == pytest.approx(slow, abs=1e-12)


def test_row_ranks_match_scipy():
    from hcs.calibration.metrics import _resample_ranks, _row_ranks

    rng = np.random.default_rng(6)
    a = rng.integers(1, 6, size=(50, 30)).astype(float) + rng.integers(0, 3, size=(50, 30)) / 3
    assert np.allclose(_row_ranks(a), stats.rankdata(a, axis=1))
    values = rng.normal(size=40).round(1)
    idx = rng.integers(0, 40, size=(25, 40))
    assert np.allclose(_resample_ranks(values, idx), stats.rankdata(values[idx], axis=1))


def test_bootstrap_ci_tiny_sample_is_undefined():
    assert all(math.isnan(v) for v in bootstrap_ci([1, 2], [2, 3], "spearman"))


def test_confusion_matrix_rows_are_human():
    assert confusion_matrix([1, 1, 5], [2, 1, 5]) == [
        [1, 1, 0, 0, 0],
        [0, 0, 0, 0, 0],
        [0, 0, 0, 0, 0],
        [0, 0, 0, 0, 0],
        [0, 0, 0, 0, 1],
    ]
    with pytest.raises(ValueError, match="category 6 is outside 1–5"):
        confusion_matrix([6], [1])


def test_qwk_matches_statsmodels():
    rng = np.random.default_rng(3)
    h = rng.integers(1, 6, 80)
    j = np.clip(h + rng.integers(-2, 3, 80), 1, 5)
    table = np.array(confusion_matrix(h, j))
    reference = cohens_kappa(table, wt="quadratic").kappa
    assert quadratic_weighted_kappa(h, j) == pytest.approx(reference, abs=1e-12)
    assert quadratic_weighted_kappa(h, h) == pytest.approx(1.0)


def test_qwk_uses_rounded_human_median():
    # Item medians 2, 3.5 → 4 (half up), 5; judge 2.4 → 2, 3.6 → 4, 4.5 → 5: perfect agreement.
    human = {"a": {"x": 2, "y": 2, "z": 3}, "b": {"x": 3, "y": 4}, "c": {"x": 5, "y": 5, "z": 4}}
    judge = {"a": 2.4, "b": 3.6, "c": 4.5}
    result = calibrate_judge(human, judge, n_boot=10)
    assert result.qwk == pytest.approx(1.0)
    assert result.confusion[1][1] == 1 and result.confusion[3][3] == 1 and result.confusion[4][4] == 1


def test_human_ceiling_by_hand():
    human = {
        "i1": {"a": 1, "b": 2, "c": 1},
        "i2": {"a": 3, "b": 3, "c": 4},
        "i3": {"a": 5, "b": 4, "c": 5},
        "i4": {"a": 2, "b": 1, "c": 3},
    }
    expected = []
    for who in "abc":
        mine = [human[i][who] for i in human]
        others = [(sum(human[i].values()) - human[i][who]) / 2 for i in human]
        expected.append(_pearson(_ranks(mine), _ranks(others)))
    assert human_ceiling(human) == pytest.approx(sum(expected) / 3, abs=1e-12)


def test_alpha_published_example():
    # Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", 4 observers × 12 units with
    # missing values; interval α = 0.849. Observer D plays the judge; unit 12 (one value) never counts.
    nan = None
    a = [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan]
    b = [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3]
    c = [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan]
    d = [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan]
    human = {
        u: {who: v for who, v in (("A", a[u]), ("B", b[u]), ("C", c[u])) if v is not None} for u in range(12)
    }
    judge = {u: d[u] for u in range(11)}
    _, with_judge = alpha_with_and_without_judge(human, judge)
    assert with_judge == pytest.approx(0.849, abs=5e-4)


def test_alpha_drops_with_a_random_judge():
    human, _ = _small_study(n_items=60)
    rng = np.random.default_rng(5)
    noise = {i: float(rng.uniform(1, 5)) for i in human}
    humans_only, with_judge = alpha_with_and_without_judge(human, noise)
    assert with_judge < humans_only


def test_hanna_chatgpt_coherence_is_plausible():
    long = pd.read_csv(HANNA / "hanna_human_long.csv")
    wide = pd.read_csv(HANNA / "hanna_llm_scores_wide.csv")
    coherence = long[long.criterion == "Coherence"]
    human = {}
    for story, rater, score in coherence[["story_id", "rater", "score"]].itertuples(index=False):
        human.setdefault(story, {})[rater] = score
    judge = dict(zip(wide.story_id, wide["ChatGPT CH 1"]))
    result = calibrate_judge(human, judge, n_boot=200)
    assert result.n == 1056
    # LLM–human story correlations are positive and well below 1 (Chhun et al., 2024).
    assert 0 < result.spearman < 0.8
    # HANNA's three coherence rating slots barely agree: each slot against the mean of the other two
    # correlates slightly negatively, so a judge can beat this ceiling. Same number as pandas gives.
    wide_h = coherence.pivot(index="story_id", columns="rater", values="score")
    direct = np.mean(
        [stats.spearmanr(wide_h[r], wide_h.drop(columns=r).mean(axis=1)).statistic for r in wide_h.columns]
    )
    assert result.human_ceiling_spearman == pytest.approx(direct, abs=1e-12)
    assert result.human_ceiling_spearman < 0
    assert result.alt_test.n_items == 1056
    assert len(result.alt_test.comparisons) == 3
    assert result.alt_test.winning_rate in (0.0, 1 / 3, 2 / 3, 1.0)
    assert sum(sum(row) for row in result.confusion) == 1056


def test_no_overlap_with_people_gives_empty_not_an_error():
    # A judge that scored items nobody has rated yet: n = 0, every statistic undefined.
    result = calibrate_judge({}, {"a": 3.0}, n_boot=10)
    assert result.n == 0
    assert result.spearman is None and result.qwk is None and result.mae is None
    assert result.alt_test.winning_rate is None and not result.alt_test.passed
    assert sum(map(sum, result.confusion)) == 0


def test_qwk_by_the_formula():
    # κ_w = 1 − Σ w·O / Σ w·E with w = (i − j)² / (K − 1)² (Cohen 1968), written out on a 3-point scale.
    human, judge = [1, 1, 2, 2, 3, 3], [1, 2, 2, 3, 3, 3]
    observed = np.array([[1, 1, 0], [0, 1, 1], [0, 0, 2]], dtype=float)
    i, j = np.indices((3, 3))
    w = (i - j) ** 2 / 4
    expected = np.outer(observed.sum(1), observed.sum(0)) / 6
    assert quadratic_weighted_kappa(human, judge, (1, 3)) == pytest.approx(
        1 - (w * observed).sum() / (w * expected).sum()
    )
    assert quadratic_weighted_kappa(human, judge, (1, 3)) == pytest.approx(1 - (2 / 4) / (w * expected).sum())


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_kappa_of_a_table_matches_statsmodels_for_every_weighting(weights):
    from hcs.calibration.metrics import kappa_of_table

    rng = np.random.default_rng(11)
    for size in (2, 3, 5):
        for _ in range(20):
            table = rng.integers(0, 9, (size, size)).astype(float)
            if table.sum() == 0:
                continue
            reference = cohens_kappa(table, wt=weights).kappa
            mine = kappa_of_table(table, weights=weights)
            if math.isfinite(reference):
                assert mine == pytest.approx(reference, abs=1e-12)
            else:
                assert math.isnan(mine)
    one_category = np.array([[7.0, 0], [0, 0]])  # chance agreement of 1: κ undefined
    assert math.isnan(kappa_of_table(one_category, weights=weights))
    assert math.isnan(kappa_of_table(np.zeros((3, 3)), weights=weights))


def test_kappa_of_a_table_refuses_an_unknown_weighting():
    from hcs.calibration.metrics import kappa_of_table

    with pytest.raises(ValueError, match="weights must be"):
        kappa_of_table(np.eye(3), weights="cubic")


def test_qwk_resamples_is_quadratic_weighted_kappa_of_each_resample():
    from hcs.calibration.metrics import bootstrap_ci, quadratic_weighted_kappa, qwk_resamples

    rng = np.random.default_rng(3)
    human, judge = rng.integers(1, 6, 40), rng.integers(1, 6, 40)
    idx = rng.integers(0, 40, size=(200, 40))
    idx[0] = 0  # one pair repeated: chance agreement of 1, undefined
    expected = np.array([quadratic_weighted_kappa(human[i], judge[i], (1, 5)) for i in idx])
    np.testing.assert_allclose(qwk_resamples(human, judge, idx, (1, 5)), expected, equal_nan=True)
    assert np.isnan(expected[0])
    # The bootstrap's "qwk" draws the same resamples as the same function passed in.
    looped = bootstrap_ci(human, judge, lambda h, j: quadratic_weighted_kappa(h.astype(int), j.astype(int)))
    assert bootstrap_ci(human, judge, "qwk") == pytest.approx(looped)
    with pytest.raises(ValueError, match="outside"):
        qwk_resamples(np.array([0, 1]), np.array([1, 1]), idx[:, :2] % 2, (1, 5))
