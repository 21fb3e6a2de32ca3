"""Uncertainty routing: per-item uncertainty, sampling probabilities, and the active-inference estimate
(Zrnic & Candès 2024) checked against its formula written out and by simulation."""

import numpy as np
import pytest
from scipy.stats import t as student_t

from hcs.routing import (
    active_mean,
    active_ppi_mean,
    item_uncertainty,
    most_uncertain,
    sampling_probabilities,
)

NAN = np.nan


def test_each_part_and_its_reason():
    u = item_uncertainty(
        n_items=4,
        judge_scores=[[1, 5], [3, 3], [NAN, 2.2], [NAN, NAN]],
        samples=[[3, 3, 3], [2, 4, NAN], [NAN, NAN, NAN], [NAN, NAN, NAN]],
        confidence=[0.99, NAN, NAN, 0.5],
        caps=[2],
    )
    assert u.value[0] == pytest.approx(np.std([1, 5], ddof=1))
    assert u.reason[0] == "judges disagree (SD 2.83)"
    assert u.value[1] == pytest.approx(np.sqrt(2)) and u.reason[1] == "samples vary (SD 1.41)"
    assert u.value[2] == pytest.approx(0.5 * (1 - 0.2)) and u.reason[2] == "near a cap (score 2.20)"
    assert u.value[3] == pytest.approx(0.5 * 2) and u.reason[3] == "low confidence (0.50)"
    nothing = item_uncertainty(n_items=2, judge_scores=[[3], [4]])
    assert np.isnan(nothing.value).all() and nothing.reason == ("", "")


def test_most_uncertain_over_dimensions():
    a = item_uncertainty(n_items=3, judge_scores=[[1, 2], [3, 3], [NAN, 1]])
    b = item_uncertainty(n_items=3, judge_scores=[[1, 1], [1, 4], [NAN, 1]])
    m = most_uncertain({"coherence": a, "fluency": b})
    assert m.value[0] == pytest.approx(np.std([1, 2], ddof=1)) and m.reason[0].startswith("coherence: judges")
    assert m.value[1] == pytest.approx(np.std([1, 4], ddof=1)) and m.reason[1].startswith("fluency: ")
    assert np.isnan(m.value[2]) and m.reason[2] == ""


def test_sampling_probabilities():
    rng = np.random.default_rng(1)
    u = rng.gamma(1.0, 1.0, size=500)
    u[::50] = 30  # a few items would want π > 1
    pi = sampling_probabilities(u, 100)
    assert pi.sum() == pytest.approx(100) and pi.max() <= 1 and pi.min() >= 0.1 * 100 / 500 - 1e-12
    below = pi < 1
    weight = 0.9 * u / u.sum() + 0.1 / 500  # uncertainty mixed with the uniform rule
    ratio = pi[below] / weight[below]
    assert np.allclose(ratio, ratio[0])  # below the cap of 1, π stays proportional to that mix
    assert sampling_probabilities([NAN, 1.0, 3.0], 1.5, mix=0).tolist() == pytest.approx([0.5, 0.25, 0.75])
    with pytest.raises(ValueError, match="budget"):
        sampling_probabilities(u, 0)
    with pytest.raises(ValueError, match="mix"):
        sampling_probabilities(u, 10, mix=2)


def test_active_mean_is_the_formula_written_out():
    y = np.array([3.0, 1.0, 4.0, 5.0, 2.0, 4.0])
    f = np.array([2.5, 1.5, 4.0, 4.0, 2.0, 3.5])
    xi = np.array([True, False, True, False, True, False])
    pi = np.array([0.5, 0.2, 0.8, 0.4, 0.5, 0.6])
    for lam in (0.0, 0.4, 1.0):
        terms = [lam * f[i] + ((y[i] - lam * f[i]) / pi[i] if xi[i] else 0.0) for i in range(6)]
        r = active_mean(y, f, xi, pi, lam=lam, offset=0.0)
        assert r.estimate == pytest.approx(np.mean(terms))
        # λ and b fixed: the fit is the constant alone (leverage 1/6), and t has 3 labelled − 1 df.
        se = np.std(terms) / np.sqrt(6) * 6 / 5
        q = student_t.ppf(0.975, 2)
        assert r.ci95 == pytest.approx((np.mean(terms) - q * se, np.mean(terms) + q * se), rel=1e-6)
    shifted = active_mean(y, f, xi, pi, lam=0.4, offset=0.7)
    assert shifted.estimate == pytest.approx(
        np.mean([0.4 * f[i] + 0.7 + ((y[i] - 0.4 * f[i] - 0.7) / pi[i] if xi[i] else 0) for i in range(6)])
    )
    tuned = active_mean(y, f, xi, pi)
    grid = [
        active_mean(y, f, xi, pi, lam=v, offset=b)
        for v in np.linspace(0, 1, 51)
        for b in np.linspace(-2, 2, 41)
    ]
    best = min(grid, key=lambda r: r.ci95[1] - r.ci95[0])
    # λ and b minimise the plug-in width (read with them held fixed, as the grid's are)
    refit = active_mean(y, f, xi, pi, lam=tuned.lam, offset=tuned.offset)
    assert refit.ci95[1] - refit.ci95[0] <= best.ci95[1] - best.ci95[0] + 1e-6
    with pytest.raises(ValueError, match="probability"):
        active_mean(y, f, xi, np.zeros(6))


def test_active_inference_is_unbiased_and_covers_where_naive_top_n_is_biased():
    rng = np.random.default_rng(7)
    big_n, budget, reps, truth = 2000, 150, 400, 3.0
    estimates, covered, naive = [], [], []
    for _ in range(reps):
        y = rng.normal(truth, 1, size=big_n)
        sigma = rng.uniform(0.1, 2.0, size=big_n)
        f = y + 0.3 + rng.normal(0, 1, size=big_n) * sigma + 0.5 * (sigma > 1.5)  # unsure items are also off
        pi = sampling_probabilities(sigma, budget)
        xi = rng.random(big_n) < pi
        r = active_mean(y, f, xi, pi)
        estimates.append(r.estimate)
        covered.append(r.ci95[0] <= truth <= r.ci95[1])
        top = np.argsort(-sigma)[:budget]  # the most uncertain, averaged as if random
        rest = np.setdiff1d(np.arange(big_n), top)
        naive.append(f[rest].mean() + (y[top] - f[top]).mean())
    assert abs(np.mean(estimates) - truth) < 3 * np.std(estimates) / np.sqrt(reps)
    assert 0.92 <= np.mean(covered) <= 0.98
    assert abs(np.mean(naive) - truth) > 10 * np.std(naive) / np.sqrt(
        reps
    )  # the bias active weighting removes


def test_with_uniform_probabilities_active_inference_is_ppi_py_on_every_item():
    """Zrnic & Candès's estimator with π = n/N for every item, exactly n labelled, λ fixed and no offset, is
    PPI with the judge's mean over all N items: ppi_py's point estimate with every item as "unlabelled"."""
    from ppi_py import ppi_mean_pointestimate

    rng = np.random.default_rng(11)
    big_n, n = 400, 40
    y = rng.normal(3, 1, size=big_n)
    f = y + 0.4 + rng.normal(0, 0.6, size=big_n)
    xi = np.zeros(big_n, dtype=bool)
    xi[rng.choice(big_n, n, replace=False)] = True
    for lam in (0.0, 0.35, 1.0):
        ours = active_mean(y, f, xi, np.full(big_n, n / big_n), lam=lam, offset=0.0)
        reference = float(ppi_mean_pointestimate(y[xi], f[xi], f, lam=lam)[0])
        assert ours.estimate == pytest.approx(reference, abs=1e-12)


def test_active_ppi_mean_columns_are_the_formula_written_out():
    y = np.array([3.0, 1.0, 4.0, 5.0, 2.0, 4.0, 3.0])
    f = np.array([2.5, 1.5, 4.0, 4.0, 2.0, 3.5, 3.0])
    xi = np.array([True, False, True, False, True, False, True])
    pi = np.array([0.5, 0.2, 0.8, 0.4, 0.5, 0.6, 1.0])
    r = active_ppi_mean(y, f, xi, pi)
    g = r.lam * f + r.offset
    terms = g + np.where(xi, (y - g) / pi, 0.0)  # Zrnic & Candès 2024, eq. 3
    assert r.estimate == pytest.approx(terms.mean())
    # λ and b are the least-squares fit of the terms on c = 1 − ξ/π and a = f·c: the interval is the fit's
    # intercept with statsmodels' HC3 standard error (centred columns make the intercept the mean of the
    # terms), and Student's t on 4 labelled − 3 df.
    import statsmodels.api as sm

    w = np.where(xi, 1 / pi, 0.0)
    c, a = 1 - w, f * (1 - w)
    design = np.column_stack([np.ones(7), c - c.mean(), a - a.mean()])
    assert 0 < r.lam < 1  # λ was fitted, not clipped: its column counts
    fit = sm.OLS(terms, design).fit(cov_type="HC3")
    q = student_t.ppf(0.975, 1)
    assert fit.params[0] == pytest.approx(r.estimate)
    assert r.ci95_superpopulation == pytest.approx((r.estimate - q * fit.bse[0], r.estimate + q * fit.bse[0]))
    # For these items' own mean: Poisson sampling's unbiased variance estimate, Σ_drawn (Y − g)² (1 − π)/π² / M²,
    # each residual divided by 1 − its leverage as above
    h = fit.get_influence().hat_matrix_diag
    half = (
        q
        * np.sqrt(
            sum((y[i] - g[i]) ** 2 / (1 - h[i]) ** 2 * (1 - pi[i]) / pi[i] ** 2 for i in range(7) if xi[i])
        )
        / 7
    )
    assert r.ci95 == pytest.approx((r.estimate - half, r.estimate + half), rel=1e-6)
    # Human only: λ = 0, the offset that minimises the variance (a least-squares slope, written with np.cov).
    b = -np.cov(y * w, 1 - w, bias=True)[0, 1] / np.var(1 - w)
    human = b + np.where(xi, (y - b) / pi, 0.0)
    assert r.human_only == pytest.approx(human.mean())
    assert (r.n_labelled, r.n_unlabelled, r.judge_only) == (4, 3, pytest.approx(f.mean()))
    assert r.to_json()["estimator"] == "active_inference" and r.to_json()["offset"] == r.offset
    assert active_ppi_mean(y, f, [True] + [False] * 6, pi) is None  # one label: no estimate


def test_a_stratum_whose_drawn_items_have_no_label_yet_gives_no_estimate():
    """Right after a draw, none of its picked items is labelled: only the items labelled before it (π = 1)
    have labels. Their corrections say nothing about the candidates, so there is no estimate rather than an
    interval too narrow for the population."""
    from hcs.routing import active_ppi_mean, labelled_so_far

    pi = [0.4, 0.3, 0.2, 0.5, 1.0, 1.0, 1.0]
    selected = [True, False, False, True, True, True, True]
    labelled = [False, False, False, False, True, True, True]
    before = [False, False, False, False, True, True, True]
    xi, used = labelled_so_far(pi, selected, labelled, strata=before)
    assert xi.tolist() == labelled
    assert used.tolist() == [0.0, 0.3, 0.2, 0.0, 1.0, 1.0, 1.0]  # the drawn stratum: share 0 of 2
    y = [0.0, 0.0, 0.0, 0.0, 3.0, 4.0, 2.0]
    f = [3.0, 2.0, 4.0, 3.0, 3.0, 4.0, 2.5]
    assert active_ppi_mean(y, f, xi, used) is None
    # One drawn item labelled: the stratum's share is 1/2 and the estimate is back.
    labelled[0] = True
    y[0] = 3.0
    xi, used = labelled_so_far(pi, selected, labelled, strata=before)
    assert used[0] == pytest.approx(0.2) and used[3] == pytest.approx(0.25)
    assert active_ppi_mean(y, f, xi, used) is not None


def test_an_item_far_from_every_cap_is_not_said_to_be_near_one():
    from hcs.routing import item_uncertainty

    u = item_uncertainty(n_items=2, judge_scores=[[5.0], [2.5]], caps=(1.0, 2.0))
    assert u.value.tolist() == [0.0, 0.25]
    assert u.reason == ("far from every cap (score 5.00)", "near a cap (score 2.50)")
