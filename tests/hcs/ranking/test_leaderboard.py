"""The leaderboard recovers a planted ranking, its intervals contain their own estimates, and the bootstrap over
prompts covers the scores' target when battles on one prompt are alike (where resampling rows does not)."""

import json

import numpy as np
import pytest
from scipy.stats import kendalltau

from hcs.ranking.battles import Battles, battles, prompt_counts
from hcs.ranking.bt import fit_counts
from hcs.ranking.leaderboard import leaderboard
from hcs.ranking.simulate import planted_battles

PLANTED = np.linspace(-1.0, 1.0, 10)  # adjacent systems 0.22 apart: a 55 % head-to-head win rate


def test_a_planted_ranking_of_ten_systems_is_recovered_from_2000_battles():
    rng = np.random.default_rng(37)
    taus = []
    for _ in range(100):
        bt = planted_battles(rng, PLANTED, 2000)
        pc = prompt_counts(bt)
        taus.append(kendalltau(fit_counts(pc.totals(), pc.pairs, 10).scores[0], PLANTED).statistic)
    assert np.median(taus) >= 0.9
    bt = planted_battles(rng, PLANTED, 2000)
    pc = prompt_counts(bt)
    np.testing.assert_allclose(
        leaderboard(bt, n_boot=20).scores(), fit_counts(pc.totals(), pc.pairs, 10).scores[0], atol=1e-9
    )


def test_every_interval_contains_its_own_estimate():
    rng = np.random.default_rng(3)
    extended = 0
    for _ in range(10):
        # Few battles on few prompts: skewed bootstrap distributions, the case where percentiles can miss.
        bt = planted_battles(rng, np.linspace(-1.5, 1.5, 6), 60, n_prompts=15)
        for r in leaderboard(bt, n_boot=100).rows:
            if r.standing == "fitted":
                assert r.ci_low <= r.score <= r.ci_high
                assert r.rank_low <= r.rank <= r.rank_high
                extended += r.ci_extended
            elif r.standing == "above":
                assert r.score == r.ci_high == np.inf
    assert extended < 10 * 6  # stretching is the exception, not the rule


def _target(psd):
    """The scores' target under the simulation: the fit to a very large sample of the same model (ties and prompt
    effects flatten the planted scores, so they are not the planted values themselves)."""
    big = planted_battles(np.random.default_rng(5), PLANTED, 400_000, n_prompts=80_000, prompt_sd=psd)
    pc = prompt_counts(big)
    return fit_counts(pc.totals(), pc.pairs, 10).scores[0]


def _coverage(n_sims, seed, psd=0.7, n_prompts=200):
    rng, target = np.random.default_rng(seed), _target(psd)
    by_prompt, by_row = [], []
    for _ in range(n_sims):
        bt = planted_battles(rng, PLANTED, 2000, n_prompts=n_prompts, prompt_sd=psd)
        rows = Battles(np.arange(len(bt)), bt.a, bt.b, bt.outcome, bt.n_systems)
        for out, data in ((by_prompt, bt), (by_row, rows)):
            out += [r.ci_low <= target[r.system] <= r.ci_high for r in leaderboard(data, n_boot=300).rows]
    return np.mean(by_prompt), np.mean(by_row)


def test_the_bootstrap_over_prompts_covers():
    by_prompt, _ = _coverage(25, seed=11)
    assert by_prompt >= 0.88  # 250 intervals, 95 % nominal


@pytest.mark.slow
def test_the_bootstrap_over_prompts_covers_where_rows_do_not():
    # 40 battles per prompt: each system meets a prompt about 8 times, so its battles there are alike.
    by_prompt, by_row = _coverage(200, seed=12, n_prompts=50)
    assert 0.92 <= by_prompt <= 0.97
    assert by_row < 0.9


def test_the_bootstrap_is_reproducible_and_davidson_runs():
    bt = planted_battles(np.random.default_rng(8), PLANTED[:5], 500, n_prompts=100, tie_rate=0.3)
    one, two = leaderboard(bt, n_boot=100, seed=4), leaderboard(bt, n_boot=100, seed=4)
    assert one == two
    dav = leaderboard(bt, ties="davidson", n_boot=100)
    assert dav.log_nu is not None and np.isfinite(dav.scores()).all()
    assert [r.rank for r in dav.rows] == [r.rank for r in one.rows]


@pytest.mark.parametrize("kwargs", [{"alpha": 0}, {"ties": "draw"}, {"n_boot": 0}])
def test_bad_options_are_refused(kwargs):
    bt = planted_battles(np.random.default_rng(8), PLANTED[:3], 30)
    with pytest.raises(ValueError):
        leaderboard(bt, **{"n_boot": 10, **kwargs})


def test_json_rows_have_no_infinity_and_prompts_may_be_texts():
    bt = battles(
        ["p1", "p1", "p2", "p3", "p3"], [0, 1, 2, 2, 0], [1, 0, 0, 1, 1], ["a", "a", "a", "a", "tie"]
    )
    board = leaderboard(bt, n_boot=50)
    top = board.rows[2].to_json()
    assert top["standing"] == "above" and top["score"] is None and top["ci_high"] is None and top["rank"] == 1
    assert isinstance(top["ci_low"], float)
    assert json.loads(json.dumps([r.to_json() for r in board.rows], allow_nan=False))
    assert board.n_prompts == 3


def test_replicates_that_leave_a_system_undefeated_give_infinite_ends_not_absurd_finite_ones():
    # A 3-cycle on 3 prompts: most resamples drop a prompt and leave one system undefeated.
    bt = battles([0, 1, 2], [0, 1, 2], [1, 2, 0], ["a", "a", "a"])
    board = leaderboard(bt, n_boot=200)
    assert board.degenerate_replicates > 100
    assert all(abs(r.score) < 1e-9 and r.ci_low == -np.inf and r.ci_high == np.inf for r in board.rows)
    assert all((r.rank_low, r.rank_high) == (1, 3) for r in board.rows)
