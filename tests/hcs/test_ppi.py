"""PPI++ for a mean: equal to ppi_py, the published formulas, and coverage by simulation.

Two intervals: ``ci95`` for the mean of the batch's own items (labelled ones a random sample of them), and
``ci95_superpopulation`` (ppi_py's) for the mean of the population the batch was drawn from."""

import numpy as np
import pytest
from ppi_py import classical_mean_ci as ref_classical_ci
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

from hcs.ppi import (
    batch_mean_se,
    classical_mean_ci,
    equivalent_labels_saved,
    ppi_lambda,
    ppi_mean,
    ppi_mean_many,
)


def _study(rng, n, big_n, corr, scale=1.0, discrete=False):
    y = rng.normal(3, scale, size=n + big_n)
    f = 3 + corr * (y - 3) + np.sqrt(1 - corr**2) * rng.normal(0, scale, size=n + big_n) + 0.4  # biased judge
    if discrete:
        y, f = np.clip(np.round(y), 1, 5), np.clip(np.round(f), 1, 5)
    return y[:n], f[:n], f[n:]


@pytest.mark.parametrize(
    "seed,n,big_n,corr,discrete",
    [
        (0, 200, 5000, 0.7, False),
        (1, 30, 400, 0.9, True),
        (2, 50, 60, 0.2, True),
        (3, 12, 3000, -0.5, False),
        (4, 500, 500, 0.99, False),
    ],
)
def test_equals_ppi_py(seed, n, big_n, corr, discrete):
    y, f, fu = _study(np.random.default_rng(seed), n, big_n, corr, discrete=discrete)
    r = ppi_mean(y, f, fu)
    assert r.estimate == pytest.approx(float(ppi_mean_pointestimate(y, f, fu)[0]), abs=1e-6)
    lo, hi = ppi_mean_ci(y, f, fu, alpha=0.05)
    assert r.ci95_superpopulation == pytest.approx((float(lo[0]), float(hi[0])), abs=1e-12)
    h_lo, h_hi = ref_classical_ci(y, alpha=0.05)
    assert r.human_only_ci95_superpopulation == pytest.approx((h_lo, h_hi), abs=1e-12)
    assert r.human_only == pytest.approx(y.mean()) and r.judge_only == pytest.approx(np.r_[f, fu].mean())
    assert 0 <= r.lam <= 1 and (r.n_labelled, r.n_unlabelled) == (n, big_n)


def test_lambda_is_the_published_formula_written_out():
    # λ = Σ(y−ȳ)(f−f̄)/n / ((1 + n/N) · Σ_all (f−f̄_all)²/(n+N−1)), [ADZ23] eq. 6 for the mean
    y, f, fu = np.array([1.0, 3, 4, 2, 5]), np.array([2.0, 3, 5, 2, 4]), np.array([3.0, 1, 4, 5, 2, 2, 3])
    cov = sum((a - y.mean()) * (b - f.mean()) for a, b in zip(y, f)) / 5
    everything = list(f) + list(fu)
    m = sum(everything) / 12
    var = sum((v - m) ** 2 for v in everything) / 11
    lam = cov / ((1 + 5 / 7) * var)
    assert float(ppi_lambda(y, f, fu)) == pytest.approx(lam)
    estimate = lam * fu.mean() + (y - lam * f).mean()
    se = np.sqrt((lam * fu).var() / 7 + (y - lam * f).var() / 5)
    r = ppi_mean(y, f, fu)
    assert r.estimate == pytest.approx(estimate) and r.ci95_superpopulation == pytest.approx(
        (estimate - 1.959964 * se, estimate + 1.959964 * se), rel=1e-6
    )


def test_batch_interval_is_the_difference_estimators_written_out():
    # M = n + N items; the estimate is mean(y) − λ(M/N)(mean f − f̄ over all M), so with e = y − λ(M/N) f
    # SE = sqrt((1 − n/M) · Σ(e − ē)²/(n − 2) / n) (simple random sampling without replacement, Cochran thm 2.2;
    # n − 2 and Student's t with n − 2 df because λ is tuned on the same labels, as for the regression
    # estimator, Cochran §7.3); the human-only interval has λ fixed at 0: n − 1 both times.
    y, f, fu = np.array([1.0, 3, 4, 2, 5]), np.array([2.0, 3, 5, 2, 4]), np.array([3.0, 1, 4, 5, 2, 2, 3])
    r = ppi_mean(y, f, fu)
    lam, big_m = r.lam, 12
    assert r.estimate == pytest.approx(y.mean() - lam * big_m / 7 * (f.mean() - np.r_[f, fu].mean()))
    e = [a - lam * big_m / 7 * b for a, b in zip(y, f)]
    e_bar = sum(e) / 5
    se = np.sqrt((1 - 5 / 12) * sum((v - e_bar) ** 2 for v in e) / 3 / 5)
    t3, t4 = 3.182446, 2.776445  # Student's t, 97.5 % point, 3 and 4 df (published tables)
    assert r.ci95 == pytest.approx((r.estimate - t3 * se, r.estimate + t3 * se), rel=1e-6)
    h_se = np.sqrt((1 - 5 / 12) * y.var(ddof=1) / 5)
    assert r.human_only_ci95 == pytest.approx((3 - t4 * h_se, 3 + t4 * h_se), rel=1e-6)
    assert float(batch_mean_se(y, f, 7, lam, tuned=True)) == pytest.approx(se)


def test_edge_cases():
    assert ppi_mean([3.0], [3.0], [1.0, 2.0]) is None
    alone = ppi_mean([1.0, 3.0], [2.0, 2.0], [])
    assert alone.lam == 0 and alone.estimate == 2 and alone.ci95 == alone.human_only_ci95
    assert alone.ci95 == (2.0, 2.0)  # every item labelled: the batch's mean is known
    assert (
        alone.ci95_superpopulation
        == alone.human_only_ci95_superpopulation
        == ref_classical_ci(np.array([1.0, 3.0]), alpha=0.05)
    )
    constant = ppi_mean([1.0, 3.0, 2.0], [2.0, 2.0, 2.0], [2.0, 2.0])
    assert constant.lam == 0 and constant.estimate == pytest.approx(2.0)
    with pytest.raises(ValueError, match="yhat has 2"):
        ppi_mean([1.0, 2.0, 3.0], [1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="alpha"):
        classical_mean_ci([1.0, 2.0], alpha=1.5)


def test_labels_saved():
    assert equivalent_labels_saved(200, 0.2, 0.1) == 600
    assert equivalent_labels_saved(200, 0.2, 0.2) == 0
    assert equivalent_labels_saved(200, 0.2, 0.0) == 0
    r = ppi_mean(*_study(np.random.default_rng(9), 200, 5000, 0.9))
    h_width = r.human_only_ci95_superpopulation[1] - r.human_only_ci95_superpopulation[0]
    assert r.labels_saved == pytest.approx(200 * (h_width / r.superpopulation_width) ** 2 - 200)
    assert r.labels_saved > 200  # a good judge on 5,000 items is worth more than the labels themselves


def test_many_equals_one_at_a_time():
    rng = np.random.default_rng(5)
    ys, fs, fus = zip(*(_study(rng, 40, 300, 0.6) for _ in range(7)))
    est, lo, hi, lam = ppi_mean_many(np.array(ys), np.array(fs), np.array(fus))
    for i in range(7):
        r = ppi_mean(ys[i], fs[i], fus[i])
        assert (est[i], lo[i], hi[i], lam[i]) == pytest.approx((r.estimate, *r.ci95_superpopulation, r.lam))
    _, lo, hi, _ = ppi_mean_many(np.array(ys), np.array(fs), np.array(fus), batch=True)
    for i in range(7):
        assert (lo[i], hi[i]) == pytest.approx(ppi_mean(ys[i], fs[i], fus[i]).ci95)


def test_coverage_of_1000_simulated_studies():
    """Judge correlation 0.7, n = 200 labelled, N = 5,000 unlabelled: the 95 % interval covers the true
    mean in 93–97 % of studies; with a judge of pure noise it is never wider than 1.05 × human-only."""
    rng = np.random.default_rng(2025)
    studies, n, big_n, truth = 1000, 200, 5000, 3.0
    y = rng.normal(truth, 1, size=(studies, n + big_n))
    judge = truth + 0.5 + 0.7 * (y - truth) + np.sqrt(1 - 0.7**2) * rng.normal(size=y.shape)  # biased by +0.5
    est, lo, hi, lam = ppi_mean_many(y[:, :n], judge[:, :n], judge[:, n:])
    covered = np.mean((lo <= truth) & (truth <= hi))
    assert 0.93 <= covered <= 0.97
    human = ppi_mean_many(y[:, :n], judge[:, :n], judge[:, n:], lam=0.0)
    assert np.mean(hi - lo) < 0.8 * np.mean(human[2] - human[1])  # and the judge helps
    assert np.abs(est.mean() - truth) < 0.01  # the judge's +0.5 bias is rectified away

    noise = rng.normal(truth, 1, size=(studies, n + big_n))  # independent of y
    _, lo_n, hi_n, lam_n = ppi_mean_many(y[:, :n], noise[:, :n], noise[:, n:])
    _, h_lo, h_hi, _ = ppi_mean_many(y[:, :n], noise[:, :n], noise[:, n:], lam=0.0)
    assert np.max((hi_n - lo_n) / (h_hi - h_lo)) <= 1.05
    assert 0.93 <= np.mean((lo_n <= truth) & (truth <= hi_n)) <= 0.97


def _batch(seed, size, corr, discrete):
    rng = np.random.default_rng(seed)
    y = rng.normal(3, 1, size=size)
    f = 3.5 + corr * (y - 3) + np.sqrt(1 - corr**2) * rng.normal(size=size)  # biased by +0.5
    if discrete:
        y, f = np.clip(np.round(y), 1, 5), np.clip(np.round(f), 1, 5)
    return y, f


@pytest.mark.parametrize(
    "size,n,corr,discrete",
    [(600, 300, 0.7, True), (300, 150, 0.95, False), (2000, 200, 0.8, False), (400, 40, 0.5, True)],
)
def test_batch_interval_covers_the_batchs_own_mean(size, n, corr, discrete):
    """One fixed batch, 500 random labelled subsets of it: ``ci95`` covers the batch's full human mean
    93–97 % of the time. The super-population interval, for another target, over-covers it where much of
    the batch is labelled or the judge is good (1.00 at half labelled with r = 0.95)."""
    y, f = _batch(7, size, corr, discrete)
    truth = y.mean()
    rng = np.random.default_rng(11)
    hits = hits_super = hits_human = 0
    for _ in range(500):
        labelled = np.zeros(size, dtype=bool)
        labelled[rng.choice(size, n, replace=False)] = True
        r = ppi_mean(y[labelled], f[labelled], f[~labelled])
        hits += r.ci95[0] <= truth <= r.ci95[1]
        hits_super += r.ci95_superpopulation[0] <= truth <= r.ci95_superpopulation[1]
        hits_human += r.human_only_ci95[0] <= truth <= r.human_only_ci95[1]
    assert 0.93 <= hits / 500 <= 0.97
    assert 0.93 <= hits_human / 500 <= 0.97
    if n / size >= 0.5:
        assert hits_super / 500 > 0.99


def test_superpopulation_interval_covers_the_superpopulation_mean():
    """The batch redrawn each time (500 batches of 600, 300 labelled): ``ci95_superpopulation`` covers the
    mean of the distribution 93–97 %, and ``ci95``, which leaves out the unlabelled items' own variation,
    covers it less often."""
    rng = np.random.default_rng(3)
    truth, n, size, studies = 3.0, 300, 600, 500
    y = rng.normal(truth, 1, size=(studies, size))
    f = truth + 0.5 + 0.7 * (y - truth) + np.sqrt(1 - 0.7**2) * rng.normal(size=y.shape)
    hits = hits_batch = 0
    for i in range(studies):
        r = ppi_mean(y[i, :n], f[i, :n], f[i, n:])
        hits += r.ci95_superpopulation[0] <= truth <= r.ci95_superpopulation[1]
        hits_batch += r.ci95[0] <= truth <= r.ci95[1]
    assert 0.93 <= hits / studies <= 0.97
    assert hits_batch / studies < 0.90
