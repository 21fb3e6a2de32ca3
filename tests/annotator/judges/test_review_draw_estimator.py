"""The report's estimator under a recorded draw (``judge_ppi`` with a ``DrawDesign``), without the database:
simulated studies in the style of bench/ppi_routing.py, and the estimate against the paper's formula
written out in numpy."""

from datetime import UTC, datetime

import numpy as np
import pytest

from annotator.judges.selectors.draws import DrawDesign
from annotator.judges.selectors.validation import judge_ppi
from hcs.routing import sampling_probabilities

TRUTH = 3.0


def _study(rng, n_items=800, n_before=40, budget=80, share_labelled=0.75, n_queue=20):
    """One simulated batch: a judge that is sure on 80 % of items (SD 0.3) and unsure on the rest (SD 1.8),
    and off by a further point where unsure. 40 random items were labelled before the draw; the draw picks
    with π ∝ uncertainty; people have labelled a random 75 % of the drawn items so far; the regular queue
    labelled 20 other candidates."""
    y = rng.normal(TRUTH, 1, size=n_items)
    sigma = np.where(rng.random(n_items) < 0.8, 0.3, 1.8)
    f = y + 0.3 + 1.0 * (sigma > 1) + sigma * rng.normal(size=n_items)
    before = np.zeros(n_items, dtype=bool)
    before[rng.choice(n_items, n_before, replace=False)] = True
    candidates = np.flatnonzero(~before)
    pi = np.ones(n_items)
    pi[candidates] = sampling_probabilities(sigma[candidates], budget)
    selected = before | (rng.random(n_items) < pi)
    drawn = np.flatnonzero(selected & ~before)
    labelled = before.copy()
    labelled[rng.choice(drawn, int(round(share_labelled * len(drawn))), replace=False)] = True
    labelled[rng.choice(np.flatnonzero(~selected), n_queue, replace=False)] = True
    design = DrawDesign(1, budget, 0, datetime.now(UTC), pi, selected, before)
    human = np.where(labelled, y, np.nan)
    return human, dict(enumerate(f)), design


def _ppi(human, judged, design=None):
    return judge_ppi(
        judge="j",
        dimension="overall",
        label="Overall HCS",
        human_mean=human,
        judged=judged,
        item_system=np.zeros(len(human), dtype=int),
        system_names=["s"],
        design=design,
    )


def test_weighted_estimate_is_unbiased_and_covers_where_the_unweighted_panel_is_not():
    rng = np.random.default_rng(2024)
    reps = 300
    weighted, unweighted = [], []
    for _ in range(reps):
        human, judged, design = _study(rng)
        w, u = _ppi(human, judged, design), _ppi(human, judged)
        assert (
            w.overall.to_json()["estimator"] == "active_inference" and "estimator" not in u.overall.to_json()
        )
        # batches drawn afresh each time: the interval for the population's mean
        weighted.append((w.overall.estimate, *w.overall.ci95_superpopulation))
        unweighted.append((u.overall.estimate, *u.overall.ci95_superpopulation))
    for rows, unbiased in ((weighted, True), (unweighted, False)):
        est, lo, hi = np.array(rows).T
        bias, mc_se = est.mean() - TRUTH, est.std() / np.sqrt(reps)
        coverage = np.mean((lo <= TRUTH) & (TRUTH <= hi))
        if unbiased:
            assert abs(bias) < 3 * mc_se, (bias, mc_se)
            assert 0.91 <= coverage <= 0.985, coverage
        else:
            assert bias < -5 * mc_se, (bias, mc_se)  # drawn items over-represent where the judge is off
            assert coverage < 0.85, coverage


def test_for_one_batch_the_weighted_interval_covers_its_own_mean():
    """One fixed batch of 800 (the judge of ``_study``, 40 labelled before, π for a budget of 300); the draw
    and the labelling of 75 % of it repeated 300 times: ``ci95`` (Poisson sampling's variance) covers the
    batch's full human mean 91–98.5 %, the band of the super-population test above. The super-population
    interval answers another question and over-covers the batch's mean when much of it is labelled."""
    rng = np.random.default_rng(0)
    n_items, budget = 800, 300
    y = rng.normal(TRUTH, 1, size=n_items)
    sigma = np.where(rng.random(n_items) < 0.8, 0.3, 1.8)
    judged = dict(enumerate(y + 0.3 + 1.0 * (sigma > 1) + sigma * rng.normal(size=n_items)))
    before = np.zeros(n_items, dtype=bool)
    before[rng.choice(n_items, 40, replace=False)] = True
    pi = np.ones(n_items)
    pi[~before] = sampling_probabilities(sigma[~before], budget)
    hits = hits_super = 0
    reps = 300
    for _ in range(reps):
        selected = before | (rng.random(n_items) < pi)
        labelled = before.copy()
        drawn = np.flatnonzero(selected & ~before)
        labelled[rng.choice(drawn, int(round(0.75 * len(drawn))), replace=False)] = True
        design = DrawDesign(1, budget, 0, datetime.now(UTC), pi, selected, before)
        r = _ppi(np.where(labelled, y, np.nan), judged, design).overall
        hits += r.ci95[0] <= y.mean() <= r.ci95[1]
        hits_super += r.ci95_superpopulation[0] <= y.mean() <= r.ci95_superpopulation[1]
    assert 0.91 <= hits / reps <= 0.985, hits / reps
    assert hits_super / reps > 0.99, hits_super / reps


def test_the_estimate_is_the_papers_formula_on_the_draws_population():
    """Zrnic & Candès 2024, eq. 3: θ̂ = mean[g + (Y − g) ξ / π], g = λ f + b, over the draw's population, with
    π of the drawn stratum scaled by the share labelled so far, labels the draw did not pick left out, and
    an item outside the population left out."""
    #                0     1     2     3     4     5     6     7     8     9
    y = np.array([3.0, 4.0, 2.0, 5.0, 1.0, 3.0, 4.0, 2.0, 5.0, 9.0])
    f = np.array([3.5, 3.5, 2.5, 4.0, 2.0, 3.0, 4.5, 1.5, 4.0, 1.0])
    pi = np.array(
        [1.0, 0.5, 0.5, 0.25, 0.2, 0.4, 0.8, 0.3, 0.6, np.nan]
    )  # 9: outside (judged after the draw)
    before = np.array([True] + [False] * 9)
    selected = np.array([True, True, True, True, False, False, True, False, False, False])
    labelled = np.array(
        [True, True, True, False, True, False, True, False, False, True]
    )  # 3 waits; 4, 9 not used
    human = np.where(labelled, y, np.nan)
    design = DrawDesign(7, 3, 5, datetime.now(UTC), pi, selected, before)
    r = _ppi(human, dict(enumerate(f)), design)
    inside = np.arange(9)
    xi = (selected & labelled)[inside]
    share = 3 / 4  # drawn items 1, 2, 3, 6: three labelled
    pi_used = np.where(before[inside], 1.0, pi[inside] * share)
    g = r.overall.lam * f[inside] + r.overall.offset
    terms = g + np.where(xi, (y[inside] - g) / pi_used, 0.0)
    assert r.overall.estimate == pytest.approx(terms.mean())
    assert (r.overall.n_labelled, r.overall.n_unlabelled) == (4, 5)
    d = r.draw
    assert (d.n_drawn, d.n_drawn_labelled, d.n_labelled_before, d.n_labels_not_used, d.n_outside) == (
        4,
        3,
        1,
        1,
        1,
    )
    entry = r.to_json()
    assert (
        entry["estimator"] == "active_inference" and entry["draw"]["id"] == 7 and entry["draw"]["seed"] == 5
    )
    assert "unbiased" in entry["draw"]["why"]
