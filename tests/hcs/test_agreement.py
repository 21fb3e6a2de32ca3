"""hcs.agreement against published values and the reference libraries."""

import krippendorff
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from irrCAC.datasets import raw_4raters, raw_5observers
from irrCAC.raw import CAC
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from hcs.agreement import (
    AgreementError,
    counts_from_long,
    counts_from_ratings,
    dimension_agreement,
    first_k_counts,
    fleiss_kappa,
    gwet_ac2,
    krippendorff_alpha,
    landis_koch,
    percent_agreement,
    ratings_from_counts,
    weight_matrix,
)
from hcs.agreement.bootstrap import Resamples, percentile_interval
from hcs.agreement.coefficients import (
    _alpha_batched,
    _bp_resampled,
    _coincidence_features,
    _fleiss_batched,
    _fleiss_features,
    _gwet_batched,
    _gwet_features,
    brennan_prediger,
)
from hcs.agreement.examples import FLEISS_1971_DIAGNOSES, KRIPPENDORFF_2011_RELIABILITY
from tests.hanna import HANNA_HUMAN as HANNA

FIVE = [1, 2, 3, 4, 5]


def _one(table):
    return np.ones((1, len(table)))


# ------------------------------------------------------------------ Fleiss' κ
def test_fleiss_1971_diagnoses_matches_r_irr():
    # Fleiss (1971) Psychological Bulletin 76(5) 378–382; R irr::kappam.fleiss(diagnoses) = 0.4302445.
    counts = counts_from_ratings(FLEISS_1971_DIAGNOSES, FIVE)
    assert fleiss_kappa(counts) == pytest.approx(0.4302445, abs=5e-8)


def test_fleiss_equals_statsmodels_called_directly():
    table, _ = aggregate_raters(FLEISS_1971_DIAGNOSES)
    assert fleiss_kappa(counts_from_ratings(FLEISS_1971_DIAGNOSES, FIVE)) == sm_fleiss_kappa(table)


def test_fleiss_needs_equal_ratings_per_item():
    with pytest.raises(AgreementError, match="same number of ratings"):
        fleiss_kappa([[2, 1, 0], [1, 0, 0]])


# ------------------------------------------------------------------ Krippendorff's α
@pytest.mark.parametrize(
    "level, published",
    # Krippendorff (2011) "Computing Krippendorff's Alpha-Reliability", section C.
    [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)],
)
def test_krippendorff_2011_worked_example(level, published):
    counts = counts_from_ratings(KRIPPENDORFF_2011_RELIABILITY.T, FIVE)
    assert krippendorff_alpha(counts, FIVE, level) == pytest.approx(published, abs=5e-4)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_alpha_equals_krippendorff_on_reliability_data(level):
    direct = krippendorff.alpha(reliability_data=KRIPPENDORFF_2011_RELIABILITY, level_of_measurement=level)
    counts = counts_from_ratings(KRIPPENDORFF_2011_RELIABILITY.T, FIVE)
    assert krippendorff_alpha(counts, FIVE, level) == pytest.approx(direct, abs=1e-12)


def test_alpha_needs_a_pairable_item():
    with pytest.raises(AgreementError, match="rated at least twice"):
        krippendorff_alpha([[1, 0, 0], [0, 1, 0]], [1, 2, 3], "ordinal")


# ------------------------------------------------------------------ Gwet's AC1 / AC2
def test_gwet_2014_ac1_published():
    # Gwet (2014) Handbook of Inter-Rater Reliability, 4th ed., 4 raters × 12 units
    # (irrCAC raw_4raters): AC1 = 0.7754, pa = 0.8182, pe = 0.1903.
    counts = counts_from_ratings(raw_4raters().to_numpy(), FIVE)
    assert gwet_ac2(counts, FIVE, weights="identity") == pytest.approx(0.7754, abs=5e-5)
    assert percent_agreement(counts) == pytest.approx(81.82, abs=5e-3)


def test_gwet_2014_ac2_ordinal_published():
    # Same data, ordinal weights: AC2 = 0.899 with pa = 0.968, pe = 0.685 (Gwet's irrCAC).
    counts = counts_from_ratings(raw_4raters().to_numpy(), FIVE)
    assert gwet_ac2(counts, FIVE) == pytest.approx(0.899, abs=5e-4)
    w = weight_matrix(FIVE, "ordinal")
    feats = _gwet_features(counts, w)
    pa = feats[:, 0].sum() / feats[:, 1].sum()
    assert pa == pytest.approx(0.968, abs=5e-4)


@pytest.mark.parametrize("weights", ["identity", "ordinal", "quadratic", "linear"])
def test_gwet_equals_irrcac_on_raw_ratings(weights):
    # raw_5observers: Gwet (2014), 5 observers × 15 units on 0–3 with missing ratings.
    data = raw_5observers()
    cats = [0, 1, 2, 3]
    direct = CAC(data, weights=weights, categories=cats, digits=15).gwet()["est"]["coefficient_value"]
    assert gwet_ac2(counts_from_ratings(data.to_numpy(), cats), cats, weights) == pytest.approx(
        direct, abs=1e-12
    )


# ------------------------------------------------------------------ percent agreement
def test_percent_agreement_exact_and_within_one():
    # Item 1: 1,1,2 → pairs agree 2 of 6; within ±1 all 6. Item 2: 1,3 → 0 of 2; within ±1 0 of 2.
    counts = [[2, 1, 0], [1, 0, 1]]
    assert percent_agreement(counts) == pytest.approx(100 * (1 / 3 + 0) / 2)
    assert percent_agreement(counts, within=1) == pytest.approx(100 * (1 + 0) / 2)


# ------------------------------------------------------------------ invariants
def test_perfect_agreement_gives_one():
    ratings = np.array([[1, 1, 1], [2, 2, 2], [3, 3, 3], [5, 5, 5], [4, 4, 4]])
    counts = counts_from_ratings(ratings, FIVE)
    result = dimension_agreement(counts, counts, FIVE, k=3, n_resamples=50)
    assert result.fleiss_kappa == pytest.approx(1.0)
    assert result.alpha_ordinal == pytest.approx(1.0)
    assert result.alpha_interval == pytest.approx(1.0)
    assert result.gwet_ac2 == pytest.approx(1.0)
    assert result.percent_agreement == 100.0
    assert result.fleiss_label == "almost perfect"


def test_no_variation_is_undefined_not_nan():
    counts = counts_from_ratings(np.full((4, 3), 5), FIVE)
    result = dimension_agreement(counts, counts, FIVE, k=3, n_resamples=20)
    assert result.fleiss_kappa is None and result.fleiss_kappa_ci95 is None and result.fleiss_label == ""
    assert result.alpha_ordinal is None
    assert result.percent_agreement == 100.0


def test_shuffling_rater_labels_changes_nothing():
    rng = np.random.default_rng(7)
    ratings = rng.integers(1, 6, size=(40, 4)).astype(float)
    ratings[rng.random(ratings.shape) < 0.15] = np.nan
    shuffled = np.array([rng.permutation(row) for row in ratings])[:, rng.permutation(4)]
    a = counts_from_ratings(ratings, FIVE)
    b = counts_from_ratings(shuffled, FIVE)
    assert dimension_agreement(a, a[a.sum(1) == 4], FIVE, k=4) == dimension_agreement(
        b, b[b.sum(1) == 4], FIVE, k=4
    )


# ------------------------------------------------------------------ batched formulas = libraries
def _hanna_counts():
    df = pd.read_csv(HANNA)
    out = {}
    for criterion, group in df.groupby("criterion"):
        wide = group.pivot(index=["story_id", "model"], columns="rater", values="score").to_numpy()
        out[criterion] = wide
    return out


@pytest.fixture(scope="module")
def hanna():
    return _hanna_counts()


def test_batched_formulas_equal_libraries_on_hanna(hanna):
    # HANNA (Chhun et al., COLING 2022): 1,056 stories × 3 raters × 6 criteria.
    for criterion, wide in hanna.items():
        counts = counts_from_ratings(wide, FIVE)
        table, _ = aggregate_raters(wide.astype(int), n_cat=None)
        assert fleiss_kappa(counts) == pytest.approx(sm_fleiss_kappa(table), abs=1e-12), criterion
        assert _fleiss_batched(_one(counts), _fleiss_features(counts), 3)[0] == pytest.approx(
            sm_fleiss_kappa(table), abs=1e-12
        )
        for level in ("ordinal", "interval"):
            direct = krippendorff.alpha(reliability_data=wide.T, level_of_measurement=level)
            assert krippendorff_alpha(counts, FIVE, level) == pytest.approx(direct, abs=1e-12)
            batched = _alpha_batched(_one(counts), _coincidence_features(counts), FIVE, level)[0]
            assert batched == pytest.approx(direct, abs=1e-12)
        w = weight_matrix(FIVE, "ordinal")
        direct = CAC(pd.DataFrame(wide), weights="ordinal", categories=FIVE, digits=15).gwet()["est"]
        assert gwet_ac2(counts, FIVE) == pytest.approx(direct["coefficient_value"], abs=1e-12)
        assert _gwet_batched(_one(counts), _gwet_features(counts, w), w)[0] == pytest.approx(
            direct["coefficient_value"], abs=1e-12
        )


def test_batched_formulas_equal_libraries_on_published_examples():
    counts = counts_from_ratings(KRIPPENDORFF_2011_RELIABILITY.T, FIVE)
    for level in ("nominal", "ordinal", "interval"):
        batched = _alpha_batched(_one(counts), _coincidence_features(counts), FIVE, level)[0]
        assert batched == pytest.approx(krippendorff_alpha(counts, FIVE, level), abs=1e-12)
    fleiss = counts_from_ratings(FLEISS_1971_DIAGNOSES, FIVE)
    assert _fleiss_batched(_one(fleiss), _fleiss_features(fleiss), 6)[0] == pytest.approx(0.4302445, abs=5e-8)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.lists(st.one_of(st.none(), st.integers(1, 5)), min_size=4, max_size=4), min_size=3, max_size=25
    )
)
def test_batched_equals_libraries_on_random_data(rows):
    ratings = np.array([[np.nan if v is None else v for v in row] for row in rows], dtype=float)
    counts = counts_from_ratings(ratings, FIVE)
    if not (counts.sum(1) >= 2).any():
        return
    w = weight_matrix(FIVE, "ordinal")
    with np.errstate(all="ignore"):
        for level in ("ordinal", "interval"):
            lib = krippendorff_alpha(counts, FIVE, level)
            ours = _alpha_batched(_one(counts), _coincidence_features(counts), FIVE, level)[0]
            assert np.isnan(lib) == np.isnan(ours)
            if not np.isnan(lib):
                assert ours == pytest.approx(lib, abs=1e-9)
        lib = gwet_ac2(counts, FIVE)
        ours = _gwet_batched(_one(counts), _gwet_features(counts, w), w)[0]
        if np.isfinite(lib):
            assert ours == pytest.approx(lib, abs=1e-9)


# ------------------------------------------------------------------ bootstrap
def test_each_resample_equals_the_library_on_the_resampled_items():
    counts = counts_from_ratings(FLEISS_1971_DIAGNOSES, FIVE)
    resamples = Resamples.draw(counts, n_resamples=5, seed=3)
    batched = _fleiss_batched(resamples.multiplicity, _fleiss_features(resamples.patterns), 6)
    for row, value in zip(resamples.multiplicity, batched):
        expanded = np.repeat(resamples.patterns, row.astype(int), axis=0)
        assert len(expanded) == len(counts)
        assert value == pytest.approx(sm_fleiss_kappa(expanded), abs=1e-12)


def test_bootstrap_is_seeded_and_brackets_the_estimate(hanna):
    counts = counts_from_ratings(hanna["Coherence"], FIVE)
    a = dimension_agreement(counts, counts, FIVE, k=3, seed=11)
    b = dimension_agreement(counts, counts, FIVE, k=3, seed=11)
    c = dimension_agreement(counts, counts, FIVE, k=3, seed=12)
    assert a == b
    assert a.alpha_ordinal_ci95 != c.alpha_ordinal_ci95
    for value, ci in [
        (a.fleiss_kappa, a.fleiss_kappa_ci95),
        (a.alpha_ordinal, a.alpha_ordinal_ci95),
        (a.alpha_interval, a.alpha_interval_ci95),
        (a.gwet_ac2, a.gwet_ac2_ci95),
    ]:
        assert ci[0] < value < ci[1]
        assert ci[1] - ci[0] < 0.2  # 1,056 items give a narrow interval


def test_percentile_interval_refuses_mostly_undefined_resamples():
    assert percentile_interval([np.nan, np.nan, 0.5]) is None
    assert percentile_interval(np.linspace(0, 1, 101)) == pytest.approx((0.025, 0.975))


# ------------------------------------------------------------------ reshaping
def test_first_k_counts_takes_the_first_k_ratings_in_order():
    items = ["a", "a", "a", "a", "b", "b", "c", "c", "c"]
    scores = [5, 5, 5, 1, 2, 3, 4, 4, 2]
    counts = first_k_counts(items, scores, FIVE, k=3, order=range(len(items)))
    assert counts.tolist() == [[0, 0, 0, 0, 3], [0, 1, 0, 2, 0]]  # b has only 2: left out


def test_first_k_counts_sorts_by_time_itself():
    items = ["a", "a", "a", "a", "b", "b", "b"]
    scores = [1, 5, 5, 5, 2, 3, 4]
    when = ["2024-01-04", "2024-01-01", "2024-01-02", "2024-01-02", "2024-01-01", "2024-01-03", "2024-01-02"]
    # a: 5 (01), 5 and 5 (02, ties keep row order); the 1 came last. b: 2, 4, 3 in time order.
    expected = [[0, 0, 0, 0, 3], [0, 1, 1, 1, 0]]
    assert first_k_counts(items, scores, FIVE, k=3, order=when).tolist() == expected
    shuffle = [6, 3, 0, 5, 2, 4, 1]
    shuffled = first_k_counts(
        np.array(items)[shuffle], np.array(scores)[shuffle], FIVE, k=3, order=np.array(when)[shuffle]
    )
    assert sorted(shuffled.tolist()) == sorted(expected)  # the same rows (item order: first seen)
    with pytest.raises(AgreementError, match="order has 2 entries for 7 ratings"):
        first_k_counts(items, scores, FIVE, k=3, order=when[:2])


def test_counts_from_long_rejects_unknown_scores():
    with pytest.raises(AgreementError, match="score 7 is not one of the categories"):
        counts_from_long(["a", "a"], [1, 7], FIVE)


def test_ratings_round_trip_through_counts():
    counts = counts_from_ratings(KRIPPENDORFF_2011_RELIABILITY.T, FIVE)
    assert (counts_from_ratings(ratings_from_counts(counts, FIVE), FIVE) == counts).all()


def test_landis_koch_bands():
    # Landis & Koch (1977) Biometrics 33:159–174.
    assert [landis_koch(v) for v in (-0.01, 0.2, 0.21, 0.4, 0.6, 0.61, 0.8, 0.81, 1.0)] == [
        "poor",
        "slight",
        "fair",
        "fair",
        "moderate",
        "substantial",
        "substantial",
        "almost perfect",
        "almost perfect",
    ]


def test_unique_rows_equals_numpy_unique():
    from hcs.agreement.bootstrap import unique_rows

    rng = np.random.default_rng(2)
    table = rng.integers(0, 4, size=(500, 5))
    patterns, freq = unique_rows(table)
    expected_patterns, expected_freq = np.unique(table, axis=0, return_counts=True)
    assert (patterns == expected_patterns).all() and (freq == expected_freq).all()


# ------------------------------------------------------------------ Brennan–Prediger κ
def _irrcac_bp(counts, categories=FIVE):
    rated = np.asarray(counts)[np.asarray(counts).sum(axis=1) > 0]
    cac = CAC(pd.DataFrame(ratings_from_counts(rated, categories)), weights="identity", categories=categories)
    return cac.bp()["est"]["coefficient_value"]


def test_brennan_prediger_on_krippendorff_2011_equals_irrcac():
    counts = counts_from_ratings(KRIPPENDORFF_2011_RELIABILITY.T, FIVE)  # unequal ratings per item
    assert brennan_prediger(counts, FIVE) == pytest.approx(0.7727272727, abs=1e-9)
    assert brennan_prediger(counts, FIVE) == pytest.approx(_irrcac_bp(counts), abs=1e-4)  # irrCAC rounds to 4


def test_brennan_prediger_equals_statsmodels_randolph_on_fleiss_1971():
    counts = counts_from_ratings(FLEISS_1971_DIAGNOSES, FIVE)
    assert brennan_prediger(counts, FIVE) == pytest.approx(
        sm_fleiss_kappa(counts, method="randolph"), abs=1e-12
    )


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.lists(st.integers(0, 3), min_size=5, max_size=5).filter(lambda r: sum(r) > 0),
        min_size=2,
        max_size=15,
    ).filter(lambda rows: any(sum(r) >= 2 for r in rows))
)
def test_brennan_prediger_equals_irrcac_on_random_data(rows):
    counts = np.array(rows)
    cac = CAC(pd.DataFrame(ratings_from_counts(counts, FIVE)), weights="identity", categories=FIVE, digits=12)
    assert brennan_prediger(counts, FIVE) == pytest.approx(cac.bp()["est"]["coefficient_value"], abs=1e-9)


def test_brennan_prediger_needs_a_pairable_item_and_counts_every_category():
    with pytest.raises(AgreementError):
        brennan_prediger([[1, 0, 0, 0, 0], [0, 1, 0, 0, 0]], FIVE)
    # Chance agreement is 1/q over the whole scale: unused categories still count.
    assert brennan_prediger([[2, 0], [1, 1]], [1, 2]) == pytest.approx(0.0)
    assert brennan_prediger([[2, 0, 0], [1, 1, 0]], [1, 2, 3]) == pytest.approx(0.25)


def test_brennan_prediger_interval_is_seeded_and_brackets_the_estimate(hanna):
    counts = counts_from_ratings(next(iter(hanna.values())), FIVE)  # HANNA: 3 raters on every story
    result = dimension_agreement(counts, counts, FIVE, k=3, n_resamples=300, seed=5)
    low, high = result.brennan_prediger_ci95
    assert low <= result.brennan_prediger <= high
    resamples = Resamples.draw(counts, n_resamples=300, seed=5)
    each = _bp_resampled(resamples, FIVE)
    assert (low, high) == percentile_interval(each)
    first = resamples.patterns.repeat(resamples.multiplicity[0].astype(int), axis=0)
    assert each[0] == pytest.approx(sm_fleiss_kappa(first, method="randolph"))
