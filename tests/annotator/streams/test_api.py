"""Streams through the API: making one, pushing traces (duplicates, bad ones named, good ones kept),
labels made elsewhere, the calibration series and the alerts."""

from __future__ import annotations

import pytest

from annotator.models import Annotation, Item, Stream, StreamWindowStat, Trace, TraceScore
from annotator.streams.sampling import is_sampled
from tests.annotator.api.conftest import assert_problem
from tests.annotator.streams.conftest import trace

pytestmark = pytest.mark.django_db


def test_create_answers_the_stream_with_its_sampling_rule(api_as):
    response = api_as("researcher").post(
        "/streams", {"name": "prod", "human_rate": 0.1, "k": 4, "window": 500, "judges": ["gpt-judge"]}
    )
    assert response.status_code == 201, response.content
    body = response.json()
    stream = Stream.objects.get(name="prod")
    assert body["name"] == "prod" and body["k"] == 4 and body["window"] == "500" and body["rubric"] == "hcs"
    assert body["salt"] == stream.salt and len(stream.salt) == 32
    assert "sha256" in body["sampling_rule"]
    assert stream.batch.k == 4 and stream.window_count == 500
    assert body["dimensions"][0] == "coherence"


def test_create_refuses_bad_settings_naming_each(api_as):
    client = api_as("admin")
    body = assert_problem(
        client.post("/streams", {"name": "bad name!", "human_rate": 1.5, "k": 2, "window": "month"}), 422
    )
    columns = {e["column"] for e in body["errors"]}
    assert columns == {"name", "human_rate", "k", "window"}
    assert not Stream.objects.exists()
    client.post("/streams", {"name": "once", "human_rate": 0.1, "window": "day"})
    again = assert_problem(client.post("/streams", {"name": "once", "human_rate": 0.1, "window": "day"}), 422)
    assert "already exists" in again["detail"]


@pytest.mark.parametrize("role, status", [("annotator", 403), ("none", 403), ("anonymous", 401)])
def test_only_researchers_and_admins_use_streams(api_as, stream, role, status):
    client = api_as(role)
    assert client.post("/streams", {"name": "x", "human_rate": 0.1, "window": "day"}).status_code == status
    assert client.post("/streams/prod-chat/traces", {"traces": [trace(1)]}).status_code == status
    assert client.get("/streams/prod-chat/calibration").status_code == status
    assert client.get("/streams/prod-chat/alerts").status_code == status
    assert not Trace.objects.exists()


def test_traces_are_stored_once_and_the_sample_follows_the_rule(api_as, stream):
    client = api_as("researcher")
    traces = [trace(n) for n in range(40)]
    body = client.post("/streams/prod-chat/traces", {"traces": traces}).json()
    expected = [t["trace_id"] for t in traces if is_sampled(stream.salt, t["trace_id"], 0.5)]
    assert body == {"accepted": 40, "duplicates": 0, "sampled": expected, "errors": []}
    assert 0 < len(expected) < 40
    # The sampled traces are the items of the stream's batch, and nothing else is.
    assert sorted(Item.objects.filter(batch=stream.batch).values_list("item_id", flat=True)) == sorted(
        expected
    )
    assert set(Trace.objects.filter(sampled=True).values_list("item__item_id", flat=True)) == set(expected)
    assert TraceScore.objects.count() == 40
    # A repeat (here with another response) is counted and changes nothing; a repeat in one request too.
    again = client.post(
        "/streams/prod-chat/traces",
        {"traces": [trace(1, response="changed"), trace(99), trace(99)]},
    ).json()
    assert again["accepted"] == 1 and again["duplicates"] == 2
    assert Trace.objects.get(trace_id="t-1").response == "Answer 1."
    assert Trace.objects.count() == 41 and TraceScore.objects.count() == 41


def test_bad_traces_are_named_and_the_good_ones_kept(api_as, stream):
    good = trace(1)
    bad = [
        {"trace_id": "no-time", "prompt": "p", "response": "r"},
        trace(2, timestamp="yesterday"),
        trace(3, judge_scores=[{"judge": "unknown", "dimension": "coherence", "value": 3}]),
        trace(4, judge_scores=[{"judge": "j1", "dimension": "coherence", "value": 9}]),
        trace(5, colour="blue"),
        "not an object",
    ]
    body = api_as("researcher").post("/streams/prod-chat/traces", {"traces": [good, *bad]}).json()
    assert body["accepted"] == 1 and body["duplicates"] == 0
    errors = {e["index"]: e for e in body["errors"]}
    assert sorted(errors) == [1, 2, 3, 4, 5, 6]
    assert errors[1]["trace_id"] == "no-time" and "`timestamp` is missing" in errors[1]["problems"][0]
    assert "not an ISO 8601 time" in errors[2]["problems"][0]
    assert "not one of the stream's judges" in errors[3]["problems"][0]
    assert "outside the rubric's scale" in errors[4]["problems"][0]
    assert errors[5]["problems"] == ["unknown key `colour`"]
    assert errors[6]["trace_id"] is None
    assert list(Trace.objects.values_list("trace_id", flat=True)) == ["t-1"]


def test_more_than_a_thousand_traces_are_refused_whole(api_as, stream):
    response = api_as("researcher").post(
        "/streams/prod-chat/traces", {"traces": [trace(n) for n in range(1001)]}
    )
    assert "At most 1000" in assert_problem(response, 422)["detail"]
    assert not Trace.objects.exists()


def test_an_unknown_stream_is_404(api_as, stream):
    assert_problem(api_as("researcher").post("/streams/nope/traces", {"traces": []}), 404)


def _sampled_ids(client, n=30):
    body = client.post(
        "/streams/prod-chat/traces", {"traces": [trace(i, score=1 + i % 5) for i in range(n)]}
    ).json()
    return body["sampled"]


def test_labels_made_elsewhere_become_annotations_of_the_sampled_items(api_as, stream):
    client = api_as("researcher")
    sampled = _sampled_ids(client)
    labels = [
        {"trace_id": sampled[0], "annotator": name, "scores": {"coherence": 4, "fluency": 5}}
        for name in ("ann-a", "ann-b", "ann-c")
    ]
    response = client.post("/streams/prod-chat/annotations", labels)
    assert response.status_code == 201, response.content
    assert response.json() == {"imported": 3}
    item = Item.objects.get(batch=stream.batch, item_id=sampled[0])
    assert Annotation.objects.filter(item=item).count() == 3
    assert Item.objects.get(pk=item.pk).n_annotations == 3


def test_labels_for_unsampled_or_unknown_traces_are_refused_with_their_rows(api_as, stream):
    client = api_as("researcher")
    sampled = _sampled_ids(client)
    unsampled = next(f"t-{i}" for i in range(30) if f"t-{i}" not in sampled)
    labels = [
        {"trace_id": sampled[0], "annotator": "ann-a", "scores": {"coherence": 4}},
        {"trace_id": unsampled, "annotator": "ann-a", "scores": {"coherence": 4}},
        {"trace_id": "t-unknown", "annotator": "ann-a", "scores": {"coherence": 4}},
    ]
    body = assert_problem(client.post("/streams/prod-chat/annotations", labels), 422)
    assert [(e["row"], e["column"]) for e in body["errors"]] == [(2, "trace_id"), (3, "trace_id")]
    assert "not sampled" in body["errors"][0]["message"]
    assert not Annotation.objects.exists()


def test_calibration_series_per_window_is_stored_and_recomputed_only_where_data_changed(api_as, stream):
    client = api_as("researcher")
    day1 = [trace(i, day=1, score=1 + i % 5) for i in range(30)]
    day2 = [trace(100 + i, day=2, score=1 + i % 5) for i in range(30)]
    sampled = client.post("/streams/prod-chat/traces", {"traces": day1 + day2}).json()["sampled"]
    labels = [
        {"trace_id": t, "annotator": name, "scores": {"coherence": 1 + (int(t[2:]) + shift) % 5}}
        for t in sampled
        for name, shift in (("ann-a", 0), ("ann-b", 1), ("ann-c", 0))
    ]
    assert client.post("/streams/prod-chat/annotations", labels).status_code == 201
    body = client.get("/streams/prod-chat/calibration", judge="j1", dimension="coherence").json()
    assert body["alerts"] == [] and body["alerts_status"] == "computed"  # two days: too few to alert
    assert [w["start"][:10] for w in body["windows"]] == ["2026-03-01", "2026-03-02"]
    first = body["windows"][0]
    assert first["n_traces"] == 30
    assert first["n_human"] == sum(1 for t in sampled if int(t[2:]) < 100)
    assert set(first) >= {
        "start",
        "end",
        "n_traces",
        "n_human",
        "agreement",
        "human_mean",
        "ppi",
        "judge_mean",
        "human_alpha",
    }
    assert first["agreement"]["metric"] == "qwk" and first["agreement"]["estimate"] is not None
    assert len(first["ppi"]["ci95"]) == 2 and first["human_alpha"]["estimate"] is not None
    assert first["judge_mean"] == pytest.approx(sum(1 + i % 5 for i in range(30)) / 30)
    stored = {s.start.day: s.computed_at for s in StreamWindowStat.objects.all()}
    # Nothing changed: the stored windows are read, not computed again.
    assert client.get("/streams/prod-chat/calibration").json()["windows"] == body["windows"]
    assert {s.start.day: s.computed_at for s in StreamWindowStat.objects.all()} == stored
    # A backfilled trace on day 2 changes day 2 only.
    client.post("/streams/prod-chat/traces", {"traces": [trace(500, day=2, score=5)]})
    after = client.get("/streams/prod-chat/calibration").json()["windows"]
    now = {s.start.day: s.computed_at for s in StreamWindowStat.objects.all()}
    assert now[1] == stored[1] and now[2] != stored[2]
    assert after[0] == body["windows"][0] and after[1]["n_traces"] == 31


def test_calibration_refuses_an_unknown_judge_or_dimension(api_as, stream):
    client = api_as("researcher")
    assert (
        "judge" in assert_problem(client.get("/streams/prod-chat/calibration", judge="nobody"), 422)["detail"]
    )
    assert (
        "dimension"
        in assert_problem(client.get("/streams/prod-chat/calibration", dimension="wit"), 422)["detail"]
    )


def test_a_stream_without_alerts_lists_none_as_computed(api_as, stream):
    body = api_as("researcher").get("/streams/prod-chat/alerts").json()
    assert body == {"stream": "prod-chat", "alerts": [], "alerts_status": "computed"}


def test_count_windows_are_cut_every_n_sampled_traces(api_as, django_capture_on_commit_callbacks):
    client = api_as("researcher")
    made = client.post(
        "/streams", {"name": "counted", "human_rate": 0.5, "k": 3, "window": 4, "judges": ["j1"]}
    )
    assert made.status_code == 201, made.content
    traces = [trace(i, day=1 + i // 20) for i in range(60)]
    with django_capture_on_commit_callbacks(execute=True):  # the worker's refresh computes the windows
        sampled = client.post("/streams/counted/traces", {"traces": traces}).json()["sampled"]
    windows = client.get("/streams/counted/calibration").json()["windows"]
    assert not any(w["stale"] for w in windows)
    stamps = {t["trace_id"]: t["timestamp"] for t in traces}
    # Every trace falls in exactly one window; each window but the last holds exactly 4 sampled traces.
    per_window = [[t for t in sampled if w["start"] <= _utc(stamps[t]) < w["end"]] for w in windows]
    assert sum(w["n_traces"] for w in windows) == 60
    assert [len(p) for p in per_window[:-1]] == [4] * (len(windows) - 1)
    assert [sum(t in p for p in per_window) for t in sampled] == [1] * len(sampled)  # each in one window
    assert len(windows) == -(-len(sampled) // 4)  # as many windows as groups of 4 sampled traces
    assert all(a["end"] == b["start"] for a, b in zip(windows, windows[1:]))


def _utc(stamp: str) -> str:
    """The API's ISO form of a trace's timestamp (UTC, as the windows' bounds are written)."""
    import datetime as dt

    return dt.datetime.fromisoformat(stamp).astimezone(dt.UTC).isoformat()


def test_the_worker_computes_every_series_after_traces_arrive(
    api_as, stream, django_capture_on_commit_callbacks
):
    from annotator.streams.services.refresh import series_refresh_queue

    client = api_as("researcher")
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/streams/prod-chat/traces", {"traces": [trace(i, day=1 + i % 2) for i in range(12)]})
    # Two judges × five dimensions × two days, stored before anyone reads them.
    assert StreamWindowStat.objects.count() == 2 * 5 * 2
    assert not Stream.objects.get(pk=stream.pk).series_refresh_queued
    stored = {s.pk: s.computed_at for s in StreamWindowStat.objects.all()}
    assert client.get("/streams/prod-chat/calibration", dimension="fluency").status_code == 200
    assert {s.pk: s.computed_at for s in StreamWindowStat.objects.all()} == stored  # read, not computed
    # While a refresh is queued, later changes queue no other: the queued one will see them.
    Stream.objects.filter(pk=stream.pk).update(series_refresh_queued=True)
    assert series_refresh_queue(stream_id=stream.pk) is False
