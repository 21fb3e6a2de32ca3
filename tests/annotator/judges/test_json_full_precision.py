"""The JSON report never rounds a statistic: every float in it is checked against every float the report
computed. A JSON float that is some computed value rounded (to 2-6 decimals) but not that value fails."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import threading
from collections import Counter
from typing import Any

import numpy as np
import pytest

from annotator.reports.exports.json_export import report_to_dict
from annotator.reports.selectors.batch_report import batch_report
from tests.annotator.judges.test_judges_selector import _study
from tests.fake_judge import FakeJudge
from tests.judge_runs import run_judge

CRITERIA = ("accuracy", "completeness", "clarity", "actionability", "relevance")


def _h(text: str) -> float:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF


_ASKED: Counter[str] = Counter()
_LOCK = threading.Lock()


def noisy_score(prompt: str) -> str:
    """A score that depends on the item and, a little, on how often it was asked (for --samples)."""
    with _LOCK:
        _ASKED[prompt] += 1
        n = _ASKED[prompt]
    noise = 0.1 * (_h(f"{n}:{prompt}") - 0.5)
    return json.dumps({"score": round(min(1.0, max(0.0, _h(prompt) + noise)), 3), "reason": "ok"})


def mixed_verdict(prompt: str) -> str:
    u = _h(prompt)
    winner = "baseline" if u < 0.45 else "enhanced" if u < 0.9 else "tie"
    answer = {c: {"score": 1 + int(u * 5) % 5, "reasoning": "r"} for c in CRITERIA}
    answer["overall"] = {
        "winner": winner,
        "confidence": round(0.5 + u / 2, 3),
        "baseline_score": 3,
        "enhanced_score": 4,
    }
    return json.dumps(answer)


def computed_floats(value: Any, seen: set[float], depth: int = 0) -> None:
    """Every Python/numpy float scalar reachable from ``value`` through dataclasses, dicts and sequences."""
    if depth > 12:
        return
    if isinstance(value, (float, np.floating)) and not isinstance(value, bool):
        if math.isfinite(value):
            seen.add(float(value))
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            computed_floats(getattr(value, f.name), seen, depth + 1)
    elif isinstance(value, dict):
        for v in value.values():
            computed_floats(v, seen, depth + 1)
    elif isinstance(value, (list, tuple)):
        for v in value:
            computed_floats(v, seen, depth + 1)


def json_floats(value: Any, path: str = "$"):
    if isinstance(value, float):
        yield path, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from json_floats(v, f"{path}.{k}")
    elif isinstance(value, list):
        for n, v in enumerate(value):
            yield from json_floats(v, f"{path}[{n}]")


# Settings written as they were given, not computed (0.95 happens to be a bootstrap value rounded).
SETTINGS = {"$.bootstrap.level"}


def rounded_copies(data: dict, computed: set[float]) -> list[str]:
    """JSON paths whose float is not computed but is a computed value rounded to 2-6 decimals."""
    rounded: dict[float, float] = {}
    for value in computed:
        for digits in range(2, 7):
            short = round(value, digits)
            if short != value:
                rounded.setdefault(short, value)
    return [
        f"{path} = {v!r} (computed {rounded[v]!r})"
        for path, v in json_floats(data)
        if v not in computed and not v.is_integer() and v in rounded and path not in SETTINGS
    ]


@pytest.fixture
def probed(db):
    batch, _truth, _human = _study(n_items=24, systems=("base", "new"))
    with FakeJudge(noisy_score) as fake:
        run_judge(fake, "judged", "--judge", "pointwise", "--samples", "3", "--temperature", "0.7", model="m")
    with FakeJudge(mixed_verdict) as fake:
        pairs = ("--pairwise", "--baseline-system", "base", "--enhanced-system", "new", "--swap")
        run_judge(fake, "judged", "--judge", "pairwise", *pairs, template="geval_pairwise", model="m")
    return batch


def test_no_float_in_the_json_report_is_a_rounded_copy(probed):
    report = batch_report(batch=probed)
    data = report_to_dict(report)
    probes = data["judges"]["pointwise"]["overall"]
    # the sections this guards against are all there
    assert {"length_bias", "score_use", "self_consistency"} <= set(probes)
    assert data["judges"]["pairwise"]["overall"]["position"]["n_pairs"] == 12
    computed: set[float] = set()
    computed_floats(report, computed)
    assert rounded_copies(data, computed) == []
    # and the check does find a rounded copy: the probes carry values with more than 4 decimals
    long = [v for _, v in json_floats(probes) if v != round(v, 4)]
    assert long
    tampered = json.loads(json.dumps(data))
    tampered["judges"]["pointwise"]["overall"]["length_bias"]["spearman"] = round(
        tampered["judges"]["pointwise"]["overall"]["length_bias"]["spearman"], 4
    )
    assert rounded_copies(tampered, computed)


def test_the_check_itself():
    computed = {0.123456789, 0.5}
    assert rounded_copies({"a": 0.1235, "b": 0.5, "c": [0.123456789]}, computed) == [
        "$.a = 0.1235 (computed 0.123456789)"
    ]
