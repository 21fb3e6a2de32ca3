"""Self-consistency: per-item spread and the share of judge–human disagreement that is the judge's noise."""

import numpy as np
import pytest

from hcs.calibration.self_consistency import self_consistency


def test_hand_computed_two_items():
    # item 1: samples 3, 5 around human 3 → mean 4, v = 1, msd = (0 + 4)/2 = 2; sd (ddof 1) = √2
    # item 2: samples 2, 2, 2 with human 4 → v = 0, msd = 4; sd 0
    result = self_consistency([[3, 5, np.nan], [2, 2, 2]], [3, 4], n_boot=200)
    assert result.n_items == 2 and result.samples == 3
    assert result.per_item_sd == pytest.approx((np.sqrt(2), 0.0))
    assert result.noise_share == pytest.approx(1 / 6)  # (1 + 0) / (2 + 4)
    assert result.mean_sd == pytest.approx(np.sqrt(2) / 2)
    assert result.per_item_sd[0] == pytest.approx(np.std([3, 5], ddof=1))


def test_noise_free_judge_has_zero_share_and_pure_noise_judge_has_share_one():
    h = np.linspace(1, 5, 30)
    exact = self_consistency(np.column_stack([h + 1, h + 1, h + 1]), h, n_boot=100)
    assert exact.noise_share == pytest.approx(0, abs=1e-12) and exact.mean_sd == pytest.approx(0, abs=1e-12)
    rng = np.random.default_rng(0)
    noisy = h[:, None] + rng.normal(0, 1, size=(30, 200))
    noisy -= noisy.mean(axis=1, keepdims=True) - h[:, None]  # centred on the human mean: all error is noise
    result = self_consistency(noisy, h, n_boot=100)
    assert result.noise_share == pytest.approx(1.0)
    assert result.mean_sd == pytest.approx(1.0, abs=0.05)


def test_decomposition_identity_on_random_data():
    rng = np.random.default_rng(4)
    x = rng.integers(1, 6, size=(40, 5)).astype(float)
    h = rng.uniform(1, 5, size=40)
    result = self_consistency(x, h, n_boot=300)
    bias_part = ((x.mean(axis=1) - h) ** 2).sum()
    noise_part = x.var(axis=1).sum()  # numpy's default ddof = 0
    assert result.noise_share == pytest.approx(noise_part / (noise_part + bias_part))
    lo, hi = result.noise_share_ci95
    assert lo < result.noise_share < hi


def test_items_without_two_samples_or_people_are_left_out():
    result = self_consistency([[3, np.nan], [2, 4], [1, 5]], [3, np.nan, 3], n_boot=50)
    assert result.n_items == 1 and result.noise_share == pytest.approx(1.0)
    assert self_consistency([[3, np.nan]], [3]).noise_share is None
    with pytest.raises(ValueError, match="2 items but human_mean has 1"):
        self_consistency([[1, 2], [3, 4]], [3])
