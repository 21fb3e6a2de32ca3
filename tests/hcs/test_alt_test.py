"""The Alternative Annotator Test (Calderon, Reichart & Dror, 2025) on data with a known answer."""

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.weightstats import DescrStatsW

from hcs.calibration import alt_test, benjamini_yekutieli


def _study(n_items=80, n_annotators=5, noise=1.0, seed=0):
    """True quality per item; each annotator adds noise of its own and rounds onto 1–5."""
    rng = np.random.default_rng(seed)
    truth = rng.uniform(1, 5, n_items)
    human = {
        i: {
            f"a{a}": int(np.clip(np.rint(truth[i] + rng.normal(0, noise)), 1, 5)) for a in range(n_annotators)
        }
        for i in range(n_items)
    }
    return truth, human


def test_consensus_judge_passes():
    _, human = _study()
    consensus = {i: float(np.mean(list(r.values()))) for i, r in human.items()}
    result = alt_test(human, consensus)
    assert result.winning_rate == 1.0
    assert result.passed
    assert result.advantage_probability > 0.8
    assert result.verdict == "the judge can replace an annotator at ε = 0.2"


def test_random_judge_fails():
    _, human = _study()
    rng = np.random.default_rng(42)
    random_judge = {i: float(rng.integers(1, 6)) for i in human}
    result = alt_test(human, random_judge)
    assert result.winning_rate == 0.0
    assert not result.passed
    assert result.advantage_probability < 0.5
    assert "cannot" in result.verdict


def test_a_copy_of_an_annotator_ties_and_wins_everywhere_for_that_annotator():
    # The judge repeats a0's labels: against a0 every item is a tie, which counts as a win for both,
    # so d = 0 on every item and mean(d) = 0 < ε: the judge wins that comparison.
    _, human = _study(n_annotators=3)
    judge = {i: r["a0"] for i, r in human.items()}
    result = alt_test(human, judge)
    a0 = next(c for c in result.comparisons if c.annotator == "a0")
    assert a0.judge_win_rate == 1.0 and a0.annotator_win_rate == 1.0
    assert a0.p_value == 0.0
    assert a0.judge_wins


def test_p_values_match_a_direct_paired_t_test():
    _, human = _study(noise=1.2, seed=3)
    rng = np.random.default_rng(9)
    judge = {i: float(np.mean(list(r.values())) + rng.normal(0, 0.8)) for i, r in human.items()}
    eps = 0.1
    result = alt_test(human, judge, epsilon=eps)
    for comparison in result.comparisons:
        who = comparison.annotator
        d = []
        for item, ratings in human.items():
            others = np.array([v for k, v in ratings.items() if k != who], dtype=float)
            s_h = -np.sqrt(np.mean((ratings[who] - others) ** 2))
            s_f = -np.sqrt(np.mean((judge[item] - others) ** 2))
            d.append(int(s_h >= s_f) - int(s_f >= s_h))
        reference = DescrStatsW(np.array(d, dtype=float)).ttest_mean(value=eps, alternative="smaller")[1]
        assert comparison.p_value == pytest.approx(reference, abs=1e-12)
        assert comparison.n_items == 80
    # ω is the share of annotators rejected by Benjamini–Yekutieli, as statsmodels computes it.
    rejected = multipletests([c.p_value for c in result.comparisons], alpha=0.05, method="fdr_by")[0]
    assert result.winning_rate == pytest.approx(rejected.mean())
    assert [c.judge_wins for c in result.comparisons] == rejected.tolist()


def test_benjamini_yekutieli_matches_statsmodels():
    rng = np.random.default_rng(11)
    for _ in range(50):
        p = rng.uniform(0, 0.05, rng.integers(1, 12)) ** rng.uniform(0.5, 2)
        expected = multipletests(p, alpha=0.05, method="fdr_by")[0].tolist()
        assert benjamini_yekutieli(p, 0.05) == expected
    assert benjamini_yekutieli([]) == []


def test_annotators_with_fewer_than_30_items_are_left_out():
    _, human = _study(n_items=40, n_annotators=3)
    # A fourth annotator rates only 29 items.
    for i in range(29):
        human[i]["late"] = human[i]["a0"]
    consensus = {i: float(np.mean(list(r.values()))) for i, r in human.items()}
    result = alt_test(human, consensus)
    assert ("late", 29) in result.skipped
    assert {c.annotator for c in result.comparisons} == {"a0", "a1", "a2"}


def test_items_with_one_annotator_or_no_judge_score_do_not_count():
    _, human = _study(n_items=40, n_annotators=3)
    human[100] = {"a0": 3}  # one annotator only
    judge = {i: 3.0 for i in human if i != 0}  # no judge score for item 0
    result = alt_test(human, judge)
    assert result.n_items == 39
    assert all(c.n_items == 39 for c in result.comparisons)


def test_not_testable_when_nobody_shares_30_items():
    _, human = _study(n_items=10)
    result = alt_test(human, {i: 3.0 for i in human})
    assert result.winning_rate is None and not result.passed
    assert result.verdict.startswith("not testable")
    # It says why and what is missing, not just that the judge failed.
    assert result.verdict == (
        "not testable yet: 10 items have this judge's score and at least two people's ratings; the test "
        "needs 30, so 20 more such items (and an annotator who rated 30 of them)"
    )


def test_not_testable_says_how_many_more_items_the_closest_annotator_needs():
    # 40 items, each rated by two of four annotators; each annotator rated 20 of them.
    human = {i: {f"a{i % 4}": 3, f"a{(i + 1) % 4}": 4} for i in range(40)}
    result = alt_test(human, {i: 3.0 for i in human})
    assert result.winning_rate is None and len(result.skipped) == 4
    assert result.verdict == (
        "not testable yet: 4 annotators rated at most 20 of the 40 items with this judge's score and at least "
        "two ratings; the test needs one who rated 30, so 10 more from the closest annotator"
    )


def test_accuracy_metric_for_categories():
    rng = np.random.default_rng(2)
    labels = ["yes", "no"]
    truth = rng.integers(0, 2, 60)
    human = {
        i: {f"a{a}": labels[truth[i] if rng.random() < 0.8 else 1 - truth[i]] for a in range(4)}
        for i in range(60)
    }
    result = alt_test(human, {i: labels[truth[i]] for i in range(60)}, metric="accuracy")
    assert result.passed
    with pytest.raises(ValueError, match="metric must be"):
        alt_test(human, {}, metric="rmse")


def test_a_larger_epsilon_never_lowers_the_winning_rate():
    _, human = _study(noise=1.0, seed=4)
    rng = np.random.default_rng(1)
    judge = {i: float(np.mean(list(r.values())) + rng.normal(0, 1.0)) for i, r in human.items()}
    rates = [alt_test(human, judge, epsilon=e).winning_rate for e in (0.0, 0.1, 0.2, 0.3)]
    assert rates == sorted(rates)


def test_benjamini_yekutieli_by_hand():
    # m = 10, H_10 = 2.928968…, thresholds k / (10 · H_10) · 0.05 = 0.001707 k. Only p_(1) = 0.001 is
    # below its threshold (p_(2) = 0.008 > 0.003414, and every later p is above its own too).
    p = [0.205, 0.001, 0.039, 0.041, 0.008, 0.042, 0.06, 0.074, 0.212, 0.216]
    assert benjamini_yekutieli(p, 0.05) == [False, True] + [False] * 8
    # With q = 0.25 the thresholds are 0.008535 k: p_(3) = 0.039 > 0.0256, but p_(5) = 0.042 ≤ 0.04268,
    # so the step-up rejects the five smallest (later p's all lie above their thresholds).
    assert benjamini_yekutieli(p, 0.25) == [False, True, True, True, True, True, False, False, False, False]


def test_evidence_warnings_name_n_and_k():
    from hcs.calibration.alt_test import evidence_warnings

    assert evidence_warnings(50, 3) == []
    (only,) = evidence_warnings(49, 3)
    assert "49 item(s) (n < 50)" in only
    (only,) = evidence_warnings(120, 2)
    assert "2 annotator(s) tested (k < 3)" in only
    assert len(evidence_warnings(10, 0)) == 2
