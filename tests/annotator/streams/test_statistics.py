"""A window's numbers are the hcs functions' on the same traces, whether computed directly or read
back from the API after the data went through ingest, labels and storage."""

from __future__ import annotations

import statistics

import numpy as np
import pytest
from scipy import stats as scipy_stats

from annotator.models import Trace
from annotator.streams.series import window_statistics
from hcs.agreement import counts_from_long, krippendorff_alpha
from hcs.calibration.metrics import alpha_with_and_without_judge, calibrate_judge
from hcs.ppi import ppi_mean
from tests.annotator.streams.conftest import trace

rng = np.random.default_rng(7)
HUMAN = {f"t{i}": {a: int(rng.integers(1, 6)) for a in ("a", "b", "c")} for i in range(25)}
JUDGE = {t: float(statistics.median(r.values())) + rng.choice([-1, 0, 0, 1]) for t, r in HUMAN.items()}
JUDGE = {t: min(5.0, max(1.0, v)) for t, v in JUDGE.items()}
JUDGE.update({f"u{i}": float(rng.integers(1, 6)) for i in range(60)})  # scored, not labelled


def test_window_statistics_are_the_hcs_functions():
    stats = window_statistics(HUMAN, JUDGE, n_traces=90, scale=(1, 5))
    assert stats["n_traces"] == 90 and stats["n_human"] == 25 and stats["n_judge"] == 85
    # Agreement: the QWK calibrate_judge reports for the same traces.
    calibration = calibrate_judge(HUMAN, {t: JUDGE[t] for t in HUMAN})
    assert stats["agreement"]["estimate"] == pytest.approx(calibration.qwk)
    low, high = stats["agreement"]["ci95"]
    assert low < calibration.qwk < high
    # The human mean with Student's t interval, and PPI++ with the unlabelled traces' judge scores.
    y = [statistics.fmean(HUMAN[t].values()) for t in HUMAN]
    mean = float(np.mean(y))
    m_lo, m_hi = scipy_stats.t.interval(0.95, len(y) - 1, loc=mean, scale=scipy_stats.sem(y))
    assert stats["human_mean"] == {
        "estimate": pytest.approx(mean),
        "ci95": [pytest.approx(m_lo), pytest.approx(m_hi)],
    }
    ppi = ppi_mean(
        y, [JUDGE[t] for t in HUMAN], [v for t, v in JUDGE.items() if t not in HUMAN], n_population=90
    )
    assert stats["ppi"]["estimate"] == pytest.approx(ppi.estimate)
    assert stats["ppi"]["ci95"] == [pytest.approx(ppi.ci95[0]), pytest.approx(ppi.ci95[1])]
    assert stats["judge_mean"] == pytest.approx(np.mean(list(JUDGE.values())))
    # α among people: hcs.agreement's, and the krippendorff package's through calibrate_judge's helper.
    items = [t for t in HUMAN for _ in HUMAN[t]]
    scores = [s for t in HUMAN for s in HUMAN[t].values()]
    counts = counts_from_long(np.array(items), np.array(scores), [1, 2, 3, 4, 5])
    assert stats["human_alpha"]["estimate"] == pytest.approx(
        krippendorff_alpha(counts, [1, 2, 3, 4, 5], "interval")
    )
    assert stats["human_alpha"]["estimate"] == pytest.approx(alpha_with_and_without_judge(HUMAN, JUDGE)[0])
    assert stats["alt_test"]["winning_rate"] == calibration.alt_test.winning_rate


def test_undefined_numbers_are_null_not_invented():
    stats = window_statistics({}, {"x": 3.0}, n_traces=1, scale=(1, 5))
    assert stats["agreement"] == {
        "metric": "qwk",
        "estimate": None,
        "ci95": None,
        "withheld": "fewer than 10 paired traces (0)",
    }
    assert stats["human_mean"] == {"estimate": None, "ci95": None}
    assert stats["ppi"]["estimate"] is None and stats["human_alpha"]["estimate"] is None
    assert stats["judge_mean"] == 3.0


def test_a_capped_judge_leaves_the_window_an_interval_and_says_what_it_is_for():
    # The judge's cost cap: it scored the 12 labelled traces of a window of 30, nothing else.
    human = {f"t{i}": {"a": 3 + i % 2, "b": 4, "c": 3 + i % 3} for i in range(12)}
    judge = {t: 3.0 + (i % 3) for i, t in enumerate(human)}
    stats = window_statistics(human, judge, n_traces=30, scale=(1, 5))
    low, high = stats["ppi"]["ci95"]
    assert low < stats["ppi"]["estimate"] < high  # an interval, not the zero-width one it was
    assert stats["ppi"]["population"] == "the window's 30 traces (the judge scored 12, people labelled 12)"
    # With 6 labels PPI++ is withheld, and says why, as QWK and α do.
    few = {t: v for t, v in list(human.items())[:6]}
    stats = window_statistics(few, {t: judge[t] for t in few}, n_traces=30, scale=(1, 5))
    assert stats["ppi"]["estimate"] is None
    assert stats["ppi"]["withheld"] == "fewer than 10 labelled traces the judge scored (6)"
    assert stats["agreement"]["withheld"] == "fewer than 10 paired traces (6)"
    assert (
        stats["human_alpha"]["ci95"] is None
        and stats["human_alpha"]["withheld"] == "fewer than 10 labelled traces (6)"
    )


def test_peoples_numbers_are_the_same_whichever_judge():
    some = {t: v for t, v in JUDGE.items() if t in ("t0", "t1", "t2")}
    one, other = (window_statistics(HUMAN, j, n_traces=90, scale=(1, 5)) for j in (JUDGE, some))
    assert one["human_mean"] == other["human_mean"] and one["human_alpha"] == other["human_alpha"]
    assert (one["n_paired"], other["n_paired"], other["n_judge"], other["n_human"]) == (25, 3, 3, 25)


@pytest.mark.django_db
def test_the_api_series_equals_window_statistics_on_the_stored_data(api_as, stream):
    client = api_as("researcher")
    traces = [trace(i, day=1 + i // 40, score=1 + (i * 7) % 5) for i in range(80)]
    sampled = client.post("/streams/prod-chat/traces", {"traces": traces}).json()["sampled"]
    human = {}
    labels = []
    for t in sampled[:-3]:  # a few sampled traces stay unlabelled
        n = int(t[2:])
        human[t] = {
            name: 1 + (n + shift) % 5 for name, shift in (("ann-a", 0), ("ann-b", 1), ("ann-c", n % 2))
        }
        labels += [{"trace_id": t, "annotator": a, "scores": {"coherence": v}} for a, v in human[t].items()]
    assert client.post("/streams/prod-chat/annotations", labels).status_code == 201
    windows = client.get("/streams/prod-chat/calibration", judge="j1", dimension="coherence").json()[
        "windows"
    ]
    assert len(windows) == 2
    pk = dict(Trace.objects.values_list("trace_id", "pk"))  # the series keys traces by their row
    for day, window in zip((1, 2), windows, strict=True):
        in_day = [t for t in traces if int(t["timestamp"][8:10]) == day]
        judge = {pk[t["trace_id"]]: t["judge_scores"][0]["value"] for t in in_day}
        expected = window_statistics(
            {pk[t]: r for t, r in human.items() if pk[t] in judge}, judge, n_traces=len(in_day), scale=(1, 5)
        )
        assert window["stale"] is False
        got = {k: v for k, v in window.items() if k not in ("start", "end", "stale")}
        assert _close(got, expected)
    assert Trace.objects.filter(sampled=True).count() == len(sampled)


def _close(got, expected) -> bool:
    """Equal up to float rounding, nested."""
    if isinstance(expected, dict):
        return set(got) == set(expected) and all(_close(got[k], expected[k]) for k in expected)
    if isinstance(expected, list | tuple):
        return len(got) == len(expected) and all(_close(a, b) for a, b in zip(got, expected, strict=True))
    if isinstance(expected, float):
        return got == pytest.approx(expected)
    assert got == expected, (got, expected)
    return True
