"""The routed (active-inference) interval covers the mean ~95 % of the time however concentrated the
uncertainty that set π, once the smallest π is bounded (``sampling_probabilities``' uniform share)."""

import numpy as np
import pytest

from hcs.routing import active_mean, sampling_probabilities

FLOOR_SHARE = 0.5  # the app's share (annotator.judges.services.review.MIX): every π ≥ 0.5 · budget / N


def _coverage(mix: float, concentration: float | None, *, reps: int, seed: int, n=1000, budget=100) -> float:
    """Simulated studies as bench/ppi_routing.py: human Y ~ N(3, 1), a judge off by more where it is unsure,
    its uncertainty the SD of 5 samples; uncertainty uniform on 0.1–2 (None) or Pareto with the given tail
    index (smaller: a few very unsure items, π concentrated on them)."""
    rng = np.random.default_rng(seed)
    covered = 0
    for _ in range(reps):
        y = rng.normal(3, 1, n)
        u = rng.uniform(0.1, 2, n) if concentration is None else rng.pareto(concentration, n) + 0.05
        f = y + 0.3 + 0.4 * (u - u.mean()) + u * rng.normal(size=n)
        reported = (u[:, None] * rng.normal(size=(n, 5))).std(axis=1, ddof=1)
        pi = sampling_probabilities(reported, budget, mix=mix)
        assert pi.min() >= mix * budget / n - 1e-12  # the documented bound
        xi = rng.random(n) < pi
        r = active_mean(y, f, xi, pi)
        covered += r.ci95[0] <= 3.0 <= r.ci95[1]
    return covered / reps


@pytest.mark.slow
@pytest.mark.parametrize("concentration", [None, 3.0, 1.5, 1.0])
def test_with_the_bound_the_routed_interval_covers_across_concentrations(concentration):
    coverage = _coverage(FLOOR_SHARE, concentration, reps=1500, seed=0)
    assert 0.93 <= coverage <= 0.96, coverage


@pytest.mark.slow
def test_without_the_bound_concentrated_probabilities_under_cover():
    """The share used before (0.1): π as small as a tenth of the uniform draw's, and the interval covers
    ~0.91 when the uncertainty is concentrated."""
    assert _coverage(0.1, 1.0, reps=1500, seed=0) < 0.93
