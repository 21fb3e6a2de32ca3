"""The short version of bench/load_faults.py: 10 annotators for 10 s over HTTP, no faults.

gunicorn (2 workers) against a fresh database: SQLite, or PostgreSQL when DATABASE_URL names one
(database ``<name>_load``, dropped and re-created). Asserts what must hold, never a timing.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture
def load_faults():
    sys.path.insert(0, str(BENCH))
    try:
        import load_faults

        yield load_faults
    finally:
        sys.path.remove(str(BENCH))


@pytest.mark.slow
def test_ten_annotators_ten_seconds_lose_nothing(load_faults, tmp_path):
    url = os.environ.get("DATABASE_URL", "")
    if url.startswith("postgres"):
        database_url = load_faults.recreate_postgres(f"{url.rstrip('/')}_load")
    else:
        database_url = f"sqlite:///{tmp_path / 'load.sqlite3'}"
    # 40 items × k=3 for 10 annotators: the batch fills up, so the last slots are contended.
    result = load_faults.run_load(
        database_url=database_url, clients=10, seconds=10, items=40, faults=False, double_submit=0.2
    )
    assert result["acknowledged"] > 0
    assert result["lost"] == 0
    assert result["duplicates"] == 0
    assert result["over_k"] == 0
    assert result["counter_mismatch"] == 0
    assert result["http_5xx_in_window"] + result["http_5xx_outside_window"] == 0
    assert result["connection_errors"] == 0
    assert result["stored"] == result["acknowledged"] + result["stored_unacknowledged"]
