"""hcs.datasets: soft labels and entropy against scipy, and load() on folders built here without Django."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy.stats import entropy as scipy_entropy
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

from hcs.datasets import METADATA_KEY, DatasetError, config_path, label_entropy, load, soft_labels


def test_soft_labels_and_entropy_match_scipy():
    rng = np.random.default_rng(3)
    counts = rng.integers(0, 6, size=(200, 5))
    counts[0] = 0
    p = soft_labels(counts)
    assert np.isnan(p[0]).all() and np.isnan(label_entropy(p)[0])
    np.testing.assert_allclose(p[1:].sum(axis=1), 1.0)
    for row, h in zip(p[1:], label_entropy(p[1:]), strict=True):
        assert h == pytest.approx(scipy_entropy(row, base=2), abs=1e-12)
    assert label_entropy([[0.2] * 5])[0] == pytest.approx(np.log2(5))


def _folder(tmp_path, ratings: dict, items: list[str], *, k=3, dims=("a",), meta=True):
    for config in ("ratings", "items"):
        (tmp_path / config_path(config)).parent.mkdir(parents=True, exist_ok=True)
    table = pa.table(ratings)
    if meta:
        info = {"dimensions": list(dims), "scale": [1, 5], "k": k, "bootstrap": {"resamples": 0, "seed": 1}}
        table = table.replace_schema_metadata({METADATA_KEY: json.dumps(info)})
    pq.write_table(table, tmp_path / config_path("ratings"))
    pq.write_table(pa.table({"item_id": items}), tmp_path / config_path("items"))
    return tmp_path


def test_load_uses_the_first_k_by_time_and_leaves_excluded_raters_out(tmp_path):
    # Item x: four ratings; by time the first three are 5, 5, 1 (the 4 comes last). An excluded
    # rater's 1 on y does not count. statsmodels gives κ on the same first-k table.
    ratings = {
        "item_id": ["x", "x", "x", "x", "y", "y", "y", "y", "z", "z", "z"],
        "rater": ["r1", "r2", "r3", "r4", "r1", "r2", "r3", "bad", "r1", "r2", "r3"],
        "a": pa.array([4, 5, 5, 1, 2, 2, 3, 1, 3, 3, 3], type=pa.int8()),
        "excluded": [False] * 7 + [True] + [False] * 3,
        "created_at": pa.array(
            np.array([9, 1, 2, 3, 1, 2, 3, 4, 1, 2, 3], dtype="datetime64[s]"),
            type=pa.timestamp("us", tz="UTC"),
        ),
    }
    loaded = load(_folder(tmp_path, ratings, ["x", "y", "z"]))
    fleiss = loaded.fleiss_counts("a")
    assert fleiss.tolist() == [[1, 0, 0, 0, 2], [0, 2, 1, 0, 0], [0, 0, 3, 0, 0]]
    assert loaded.agreement("a").fleiss_kappa == pytest.approx(sm_fleiss(fleiss), abs=1e-12)
    assert loaded.counts("a").sum() == 10 and loaded.counts("a", include_excluded=True).sum() == 11


def test_load_refuses_what_it_cannot_read(tmp_path):
    with pytest.raises(DatasetError, match="missing"):
        load(tmp_path)
    ratings = {
        "item_id": ["x"],
        "rater": ["r"],
        "a": [1],
        "excluded": [False],
        "created_at": pa.array([0], type=pa.timestamp("us")),
    }
    with pytest.raises(DatasetError, match="no 'hcs' metadata"):
        load(_folder(tmp_path / "plain", ratings, ["x"], meta=False))
    with pytest.raises(DatasetError, match="'w'"):
        load(_folder(tmp_path / "orphan", {**ratings, "item_id": ["w"]}, ["x"]))
    broken = _folder(tmp_path / "broken", ratings, ["x"])
    (broken / config_path("ratings")).write_bytes(b"not parquet")
    with pytest.raises(DatasetError, match="could not be read"):
        load(broken)
