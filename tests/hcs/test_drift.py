"""hcs.drift: windows of submissions, agreement per window against statsmodels and krippendorff,
and per-annotator drift worked by hand."""

import krippendorff
import numpy as np
import pytest
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from hcs.drift import (
    agreement_over_windows,
    annotator_drift,
    windows_by_day,
    windows_every,
)

LEVELS = [1, 2, 3, 4, 5]


def test_windows_every_n_and_per_day():
    assert windows_every(7, 3).tolist() == [0, 0, 0, 1, 1, 1, 2]
    with pytest.raises(ValueError, match="at least one"):
        windows_every(3, 0)
    idx, labels = windows_by_day(["2025-03-02", "2025-03-01", "2025-03-02"])
    assert labels == ["2025-03-01", "2025-03-02"] and idx.tolist() == [1, 0, 1]


def test_each_window_holds_the_items_completed_in_it():
    # Six items, three raters each. Items 0–2 are rated in full first (window 0: 9 annotations),
    # items 3–5 next (window 1). Raters agree early and disagree later.
    early = np.array([[1, 1, 1], [3, 3, 3], [5, 5, 4]])
    late = np.array([[1, 5, 3], [2, 4, 1], [5, 1, 3]])
    ratings = np.vstack([early, late])
    items = np.repeat(np.arange(6), 3)
    scores = ratings.reshape(-1, 1).astype(float)
    window = windows_every(18, 9)
    result = agreement_over_windows(items, scores, window, n_items=6, levels=LEVELS, k=3, dimensions=["c"])
    assert [w.n_items for w in result] == [3, 3] and [w.n_annotations for w in result] == [9, 9]
    for w, block in zip(result, (early, late)):
        table, _ = aggregate_raters(block, n_cat=None)
        assert w.fleiss_kappa["c"] == pytest.approx(sm_fleiss_kappa(table), abs=1e-12)
        alpha = krippendorff.alpha(
            reliability_data=block.T.astype(float), level_of_measurement="ordinal", value_domain=LEVELS
        )
        assert w.alpha_ordinal["c"] == pytest.approx(alpha, abs=1e-12)
    assert result[0].fleiss_kappa["c"] > 0.5 > result[1].fleiss_kappa["c"]


def test_an_item_belongs_to_the_window_of_its_last_rating():
    items = np.array([0, 1, 0, 1, 0, 1])  # item 0 is finished at row 4 (window 1), item 1 at row 5
    scores = np.array([[2], [4], [2], [4], [3], [4]], dtype=float)
    result = agreement_over_windows(
        items, scores, windows_every(6, 4), n_items=2, levels=LEVELS, k=3, dimensions=["c"]
    )
    assert [w.n_items for w in result] == [0, 2]
    assert result[0].fleiss_kappa["c"] is None and result[0].alpha_ordinal["c"] is None


def test_annotator_drift_by_hand():
    # Item 0: a=4, b=2, c=3. Item 1: a=5, b=5, c=2. a's first annotation (window 0): 4 − (2+3)/2 = 1.5;
    # a's second (window 1): 5 − (5+2)/2 = 1.5. b: 2 − 3.5 = −1.5 (w0), 5 − 3.5 = 1.5 (w1).
    items = np.array([0, 0, 0, 1, 1, 1])
    who = np.array([0, 1, 2, 0, 1, 2])
    values = np.array([4, 2, 3, 5, 5, 2], dtype=float)
    window = np.array([0, 0, 0, 1, 1, 1])
    drift = annotator_drift(items, who, values, window, n_items=2, n_annotators=3)
    np.testing.assert_allclose(drift, [[1.5, 1.5], [-1.5, 1.5], [0.0, -3.0]])
    lone = annotator_drift([0], [0], [3.0], [0], n_items=1, n_annotators=1)
    assert np.isnan(lone[0, 0])  # nobody else rated the item
