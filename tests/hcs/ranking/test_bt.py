"""Bradley–Terry and Davidson fits equal a direct maximum-likelihood fit (scipy, written here) and the
reference libraries; systems whose MLE does not exist are found and reported, never given a finite bar."""

import numpy as np
import pytest
from scipy.optimize import minimize

from hcs.ranking.battles import battles, prompt_counts
from hcs.ranking.bt import fit_counts, standing
from hcs.ranking.leaderboard import leaderboard
from hcs.ranking.simulate import planted_battles
from tests.hcs.ranking.oracle import reference_fits


@pytest.fixture(scope="module")
def fixture_battles():
    rng = np.random.default_rng(37)
    return planted_battles(rng, np.linspace(-1.2, 1.2, 7), 900, n_prompts=300, tie_rate=0.15)


def direct_fit(bt, ties):
    """Maximise the log-likelihood row by row with scipy: system 0 pinned at 0, then centred."""
    a, b, o = bt.a, bt.b, bt.outcome
    k = bt.n_systems

    def negll(x):
        s = np.concatenate([[0.0], x[: k - 1]])
        u = s[a] - s[b]
        if ties == "half":
            c = np.choose(o, [1.0, 0.0, 0.5, 0.5])
            return -(c * u - np.logaddexp(0, u)).sum()
        nu = np.exp(x[k - 1])
        denom = np.log(np.exp(s[a]) + np.exp(s[b]) + nu * np.exp((s[a] + s[b]) / 2))
        ll = (
            np.choose(o, [s[a], s[b], np.log(nu) + (s[a] + s[b]) / 2, np.log(nu) + (s[a] + s[b]) / 2]) - denom
        )
        return -ll.sum()

    x0 = np.zeros(k - 1 + (ties == "davidson"))
    res = minimize(negll, x0, method="BFGS", jac="3-point", options={"gtol": 1e-9, "maxiter": 10_000})
    s = np.concatenate([[0.0], res.x[: k - 1]])
    return s - s.mean(), (res.x[k - 1] if ties == "davidson" else None)


@pytest.mark.parametrize("ties", ["half", "davidson"])
def test_scores_equal_a_direct_maximum_likelihood_fit(fixture_battles, ties):
    pc = prompt_counts(fixture_battles)
    fit = fit_counts(pc.totals(), pc.pairs, fixture_battles.n_systems, ties=ties)
    expected, log_nu = direct_fit(fixture_battles, ties)
    assert fit.converged.all()
    np.testing.assert_allclose(fit.scores[0], expected, atol=1e-6)
    assert abs(fit.scores[0].sum()) < 1e-12  # the constraint: scores sum to zero
    if ties == "davidson":
        assert fit.log_nu[0] == pytest.approx(log_nu, abs=1e-6)


def test_scores_equal_evalica_and_choix(fixture_battles):
    pc = prompt_counts(fixture_battles)
    ours = fit_counts(pc.totals(), pc.pairs, fixture_battles.n_systems).scores[0]
    refs = reference_fits(fixture_battles)
    np.testing.assert_allclose(ours, refs["evalica"], atol=1e-6)
    np.testing.assert_allclose(ours, refs["choix"], atol=1e-6)


def test_the_leaderboard_reports_the_fit_and_counts_the_record(fixture_battles):
    board = leaderboard(fixture_battles, n_boot=50)
    expected, _ = direct_fit(fixture_battles, "half")
    np.testing.assert_allclose(board.scores(), expected, atol=1e-6)
    bt = fixture_battles
    for r in board.rows:
        mine = (bt.a == r.system) | (bt.b == r.system)
        won = ((bt.a == r.system) & (bt.outcome == 0)) | ((bt.b == r.system) & (bt.outcome == 1))
        assert (r.n_battles, r.wins, r.ties) == (mine.sum(), won.sum(), (mine & (bt.outcome >= 2)).sum())
        assert r.wins + r.losses + r.ties == r.n_battles


def test_batched_fits_equal_one_at_a_time(fixture_battles):
    pc = prompt_counts(fixture_battles)
    rng = np.random.default_rng(1)
    weights = rng.poisson(1.0, size=(5, pc.n_prompts))
    together = fit_counts(pc.totals(weights), pc.pairs, 7)
    for r in range(5):
        alone = fit_counts(pc.totals(weights[r : r + 1]), pc.pairs, 7)
        np.testing.assert_allclose(together.scores[r], alone.scores[0], atol=1e-9)


def test_reweighted_counts_equal_copied_rows(fixture_battles):
    """The bootstrap's counts (weights times the per-prompt table) are those of the resampled rows."""
    bt, pc = fixture_battles, prompt_counts(fixture_battles)
    rng = np.random.default_rng(2)
    draw = rng.integers(0, pc.n_prompts, pc.n_prompts)
    weights = np.bincount(draw, minlength=pc.n_prompts)[None]
    labels = np.unique(bt.prompt)
    rows = np.concatenate([np.flatnonzero(bt.prompt == labels[p]) for p in draw])
    copied = prompt_counts(bt.subset(rows)).totals()
    np.testing.assert_allclose(pc.totals(weights)[0], copied)


def test_a_system_that_won_everything_gets_an_open_interval():
    # System 3 beats everyone it meets; 0–2 beat one another both ways; system 4 never won anything.
    a = [0, 1, 2, 0, 1, 2, 3, 3, 3, 0, 1, 2, 3]
    b = [1, 2, 0, 2, 0, 1, 0, 1, 2, 4, 4, 4, 4]
    out = ["a"] * 6 + ["a", "a", "a"] + ["a", "a", "a", "a"]
    board = leaderboard(battles(list(range(13)), a, b, out), n_boot=100)
    top, bottom = board.rows[3], board.rows[4]
    assert (top.standing, top.score, top.ci_high, top.rank, top.rank_low) == ("above", np.inf, np.inf, 1, 1)
    assert bottom.standing == "below" and bottom.score == -np.inf and bottom.ci_low == -np.inf
    assert bottom.rank == 5
    # The finite ends are likelihood-ratio bounds: there the log-likelihood sits χ²₁(.95)/2 below its supremum 0.
    fitted = np.array([r.score for r in board.rows[:3]])
    assert np.log(1 / (1 + np.exp(-(top.ci_low - fitted)))).sum() == pytest.approx(-1.920729, abs=1e-5)
    assert np.log(1 / (1 + np.exp(bottom.ci_high - fitted))).sum() == pytest.approx(-1.920729, abs=1e-5)
    assert all(r.standing == "fitted" and np.isfinite(r.score) for r in board.rows[:3])


def test_a_system_compared_with_nobody_in_the_group_is_apart():
    mask, how = standing([[1, 1, 0], [1, 0, 0]], [[0, 1], [2, 3]], 4)
    assert how == ["fitted", "fitted", "apart", "apart"]
    board = leaderboard(battles([0, 1, 2], [0, 1, 2], [1, 0, 3], ["a", "a", "a"], n_systems=4), n_boot=20)
    assert board.rows[2].standing == "apart" and np.isnan(board.rows[2].score) and board.rows[2].rank is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (([0], [0], [0], ["a"]), "battle itself"),
        (([0], [0], [1], ["win"]), "not one of a, b, tie, both_bad"),
        (([0, 1], [0, 1], [1, 5], ["a", "b"], 3), "battle 1: system_b 5 is outside 0..2"),
        (([0], [0, 1], [1], ["a"]), "differ in length"),
        (([0], [0.5], [1], ["a"]), "system_a must hold integer indices"),
    ],
)
def test_bad_battles_are_named(args, message):
    kwargs = {"n_systems": args[4]} if len(args) > 4 else {}
    with pytest.raises(ValueError, match=message):
        battles(*args[:4], **kwargs)
