"""Expected calibration error (Guo et al., 2017) on hand-computed cases."""

import numpy as np
import pytest

from hcs.calibration.confidence import reliability


def test_hand_computed_ece():
    # bin (0.8, 0.9]: 0.9, 0.9 → one right: |0.5 − 0.9| = 0.4, weight 2/4
    # bin (0.5, 0.6]: 0.6, 0.6 → both right: |1 − 0.6| = 0.4, weight 2/4  → ECE 0.4
    result = reliability([0.9, 0.9, 0.6, 0.6], [True, False, True, True])
    assert result.ece == pytest.approx(0.4)
    by_bin = {round(b.hi, 1): b for b in result.bins if b.n}
    assert by_bin[0.9].n == 2 and by_bin[0.9].accuracy == 0.5 and by_bin[0.9].confidence == pytest.approx(0.9)
    assert by_bin[0.6].accuracy == 1.0


def test_perfectly_calibrated_and_overconfident():
    conf = np.repeat([0.25, 0.75], 4)
    right = np.array([1, 0, 0, 0, 1, 1, 1, 0], dtype=bool)
    assert reliability(conf, right).ece == pytest.approx(0.0)
    assert reliability(np.ones(10), np.zeros(10, dtype=bool)).ece == pytest.approx(1.0)


def test_edges_and_missing_confidence():
    result = reliability([0.0, 1.0, 0.1, np.nan], [False, True, False, True], n_bins=10)
    assert result.n == 3
    assert result.bins[0].n == 2  # 0.0 and 0.1 fall in the first bin [0, 0.1]
    assert result.bins[-1].n == 1
    assert reliability([], []).ece is None
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        reliability([1.5], [True])
