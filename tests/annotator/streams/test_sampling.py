"""The sampling rule: a fixed function of the stream's salt and the trace id, with the promised rate."""

from __future__ import annotations

import hashlib
import math

from annotator.streams.sampling import is_sampled, sample_value


def test_the_rule_is_the_recorded_hash():
    digest = hashlib.sha256(b"salt-1" + b"trace-9").digest()
    assert sample_value("salt-1", "trace-9") == int.from_bytes(digest[:8], "big") / 2**64


def test_the_same_salt_and_trace_always_give_the_same_answer_and_another_salt_another_sample():
    ids = [f"trace-{n}" for n in range(2000)]
    first = [t for t in ids if is_sampled("salt-a", t, 0.3)]
    assert first == [t for t in ids if is_sampled("salt-a", t, 0.3)]
    assert first != [t for t in ids if is_sampled("salt-b", t, 0.3)]
    # A higher rate keeps every trace a lower rate sampled (the draw is fixed, the threshold moves).
    assert set(first) <= {t for t in ids if is_sampled("salt-a", t, 0.5)}


def test_the_sampled_share_is_the_rate():
    n, rate = 40_000, 0.05
    hits = sum(is_sampled("prod-salt", f"req-{i}", rate) for i in range(n))
    sd = math.sqrt(n * rate * (1 - rate))
    assert abs(hits - n * rate) < 5 * sd  # a binomial count: 5 SD fails with probability < 1e-6
    assert sum(is_sampled("prod-salt", f"req-{i}", 0.0) for i in range(1000)) == 0
    assert sum(is_sampled("prod-salt", f"req-{i}", 1.0) for i in range(1000)) == 1000
