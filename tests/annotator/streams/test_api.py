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
    assert response.json() == {"imported": 3, "duplicates": 0, "errors": []}
    item = Item.objects.get(batch=stream.batch, item_id=sampled[0])
    assert Annotation.objects.filter(item=item).count() == 3
    assert Item.objects.get(pk=item.pk).n_annotations == 3


def test_more_labels_than_one_request_takes_are_refused_whole(api_as, stream, monkeypatch):
    from annotator.streams.services import annotations

    monkeypatch.setattr(annotations, "MAX_LABELS", 2)
    client = api_as("researcher")
    sampled = _sampled_ids(client)
    labels = [{"trace_id": sampled[0], "annotator": f"ann-{n}", "scores": {"coherence": 4}} for n in range(3)]
    assert (
        "At most 2 labels"
        in assert_problem(client.post("/streams/prod-chat/annotations", labels), 422)["detail"]
    )
    assert not Annotation.objects.exists()


def test_labels_for_unsampled_or_unknown_traces_are_named_and_the_good_ones_kept(api_as, stream):
    client = api_as("researcher")
    sampled = _sampled_ids(client)
    unsampled = next(f"t-{i}" for i in range(30) if f"t-{i}" not in sampled)
    labels = [
        {"trace_id": sampled[0], "annotator": "ann-a", "scores": {"coherence": 4}},
        {"trace_id": unsampled, "annotator": "ann-a", "scores": {"coherence": 4}},
        {"trace_id": "t-unknown", "annotator": "ann-a", "scores": {"coherence": 4}},
    ]
    response = client.post("/streams/prod-chat/annotations", labels)
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["imported"] == 1 and body["duplicates"] == 0
    assert [(e["index"], e["trace_id"]) for e in body["errors"]] == [(1, unsampled), (2, "t-unknown")]
    assert "not sampled" in body["errors"][0]["problems"][0]
    assert "not a trace of this stream" in body["errors"][1]["problems"][0]
    assert list(Annotation.objects.values_list("item__item_id", flat=True)) == [sampled[0]]


def test_every_bad_label_is_named_in_the_api_s_own_terms(api_as, stream):
    """One request with every kind of mistake: each label is named with all of its problems, none in the
    upload file's words (lines, ``item_id``, ``constraints_met``); the good label is saved."""
    client = api_as("researcher")
    sampled = _sampled_ids(client)
    ok = {"trace_id": sampled[0], "annotator": "ann-a", "scores": {"coherence": 4}}
    labels = [
        "not an object",
        {**ok, "scores": {"coherence": 4.5}},
        {**ok, "annotator": "ann-b", "scores": {"coherence": 9, "wit": 3}, "trace_idd": "x"},
        {"trace_id": "t-unknown", "annotator": "bad name!", "scores": {}},
        {**ok, "annotator": "ann-c", "constraints": ["met"]},  # the trace has no hard constraints
        {**ok, "annotator": "ann-d", "scores": {"coherence": True}, "constraints": "met"},
        ok,
    ]
    response = client.post("/streams/prod-chat/annotations", labels)
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["imported"] == 1
    errors = {e["index"]: e for e in body["errors"]}
    assert sorted(errors) == [0, 1, 2, 3, 4, 5]
    assert errors[0]["trace_id"] is None and "JSON object" in errors[0]["problems"][0]
    assert errors[1]["trace_id"] == sampled[0]
    [fraction] = errors[1]["problems"]
    assert "`scores.coherence`" in fraction and "whole number" in fraction and "fractional" in fraction
    problems = " | ".join(errors[2]["problems"])
    assert "unknown key `trace_idd`" in problems
    assert "`scores.coherence`: 9 is outside" in problems and "`scores.wit`" in problems
    assert len(errors[3]["problems"]) == 3  # the trace, the annotator and the empty scores
    assert "`constraints`" in errors[4]["problems"][0] and "trace `" in errors[4]["problems"][0]
    assert len(errors[5]["problems"]) == 2
    text = response.content.decode()
    for upload_word in ("line ", "constraints_met", "item_id", "row "):
        assert upload_word not in text
    assert Annotation.objects.count() == 1


def test_labels_sent_again_are_duplicates_and_change_nothing(api_as, stream):
    client = api_as("researcher")
    sampled = _sampled_ids(client)
    label = {"trace_id": sampled[0], "annotator": "ann-a", "scores": {"coherence": 4}}
    first = client.post("/streams/prod-chat/annotations", [label, {**label, "scores": {"coherence": 2}}])
    assert first.status_code == 201 and first.json() == {"imported": 1, "duplicates": 1, "errors": []}
    again = client.post("/streams/prod-chat/annotations", [{**label, "scores": {"coherence": 1}}])
    assert again.status_code == 200 and again.json() == {"imported": 0, "duplicates": 1, "errors": []}
    assert list(Annotation.objects.values_list("scores__value", flat=True)) == [4]


@pytest.mark.parametrize(
    "body",
    [
        {},
        "labels",
        7,
        None,
        [],
        [None],
        [[]],
        [{"trace_id": "t-\x00", "annotator": "a\x00", "scores": {"coh\x00": 1}}],
        [{"trace_id": 5, "annotator": ["x"], "scores": [1], "constraints": {"a": 1}}],
        [{"trace_id": "t-1", "annotator": "a", "scores": {"coherence": 1e400}}],
        [{"trace_id": "t-1", "annotator": "a", "scores": {"coherence": 10**400}}],
        [{"trace_id": "t-1", "annotator": "a" * 5000, "scores": {"coherence": {"deep": [1]}}}],
        [{"trace_id": "t-1", "annotator": "a", "scores": {"coherence": "4"}, "constraints": [None, 2]}],
    ],
)
def test_no_json_body_makes_a_server_error(api_as, stream, body):
    import json

    client = api_as("researcher")
    _sampled_ids(client, n=3)
    response = client.client.post(
        "/api/v1/streams/prod-chat/annotations", data=json.dumps(body), content_type="application/json"
    )
    assert response.status_code in (200, 400, 422), response.content
    if response.status_code == 200:
        assert response.json()["imported"] == 0 and response.json()["errors"]
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
    assert {k: body[k] for k in ("stream", "alerts", "alerts_status")} == {
        "stream": "prod-chat",
        "alerts": [],
        "alerts_status": "computed",
    }


def test_the_alerts_and_the_series_say_when_nothing_could_be_detected_yet(api_as, stream):
    """No alert is not "nothing changed" while the detectors have no reference: both endpoints say what is
    missing, and the settings and assumptions the figures rest on."""
    from annotator.streams.services.series import series_refresh_all

    client = api_as("researcher")
    body = client.get("/streams/prod-chat/alerts").json()
    assert body["detection"]["coherence"]["message"].startswith("No human labels yet")
    assert not body["detection"]["coherence"]["monitoring"]
    day1 = [trace(i, day=1) for i in range(20)]
    day2 = [trace(100 + i, day=2) for i in range(20)]
    sampled = client.post("/streams/prod-chat/traces", {"traces": day1 + day2}).json()["sampled"]
    labels = [{"trace_id": t, "annotator": a, "scores": {"coherence": 3}} for t in sampled for a in "abc"]
    assert client.post("/streams/prod-chat/annotations", labels).status_code == 201
    calibration = client.get("/streams/prod-chat/calibration", dimension="coherence").json()
    detection = calibration["detection"]
    assert detection["reference_windows"] == 14 and detection["reference_windows_so_far"] == 2
    assert detection["monitoring"] is False
    assert (
        "Detection starts after 14 windows with human labels (the reference); 2 so far"
        in detection["message"]
    )
    methods = calibration["methods"]
    assert methods["detectors"] == {"reference_windows": 14, "alpha": 0.05, "horizon_windows": 90}
    assert methods["sampling"]["human_rate"] == 0.5 and methods["sampling"]["salt"] == stream.salt
    assert methods["docs"] == ["docs/streams.md", "docs/streams-statistics.md"]
    series_refresh_all(stream_id=stream.pk)  # the worker's refresh stores the windows the alerts read
    alerts = client.get("/streams/prod-chat/alerts").json()
    assert alerts["detection"]["coherence"]["reference_windows_so_far"] == 2
    assert alerts["detection"]["fluency"]["message"].startswith("No human labels yet")


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


def test_a_label_saved_in_the_browser_meanwhile_refuses_the_request_in_this_api_s_words(
    api_as, stream, monkeypatch
):
    from annotator.streams.services import annotations
    from annotator.uploads.files.errors import ImportRefused

    client = api_as("researcher")
    sampled = _sampled_ids(client)

    def raced(**kwargs):  # the database's uniqueness check fired between the checks and the insert
        raise ImportRefused(["The batch changed while the file was being saved; upload the file again."])

    monkeypatch.setattr(annotations, "annotations_import", raced)
    label = {"trace_id": sampled[0], "annotator": "ann-a", "scores": {"coherence": 4}}
    body = assert_problem(client.post("/streams/prod-chat/annotations", [label]), 422)
    assert "send the request again" in body["detail"] and "file" not in body["detail"]
    assert not Annotation.objects.exists()


def test_create_refuses_an_unknown_key_and_a_rate_nobody_reviews(api_as):
    client = api_as("researcher")
    body = assert_problem(
        client.post("/streams", {"name": "typo", "human_rate": 0.1, "windw": "day", "window": "day"}), 422
    )
    assert [e["column"] for e in body["errors"]] == ["windw"]
    body = assert_problem(client.post("/streams", {"name": "none", "human_rate": 0, "window": "day"}), 422)
    assert body["errors"][0]["column"] == "human_rate" and "cannot be calibrated" in body["detail"]
    assert client.post("/streams", {"name": "all", "human_rate": 1, "window": "day"}).status_code == 201
    assert list(Stream.objects.values_list("name", flat=True)) == ["all"]


@pytest.mark.parametrize(
    "judge, expected",
    [
        (
            {"name": "a", "template": "hcs_rubric", "model": "m", "base_url": "http://x", "cap": 1},
            "unknown key 'cap'",
        ),
        (
            {"name": "a", "template": "nope", "model": "m", "base_url": "http://x"},
            "judges[1].template: 'nope' is not a shipped",
        ),
        (
            {"name": "a", "template": "geval_pairwise", "model": "m", "base_url": "http://x"},
            "compares two responses",
        ),
        (
            {"name": "a", "template": "hub_actionability", "model": "m", "base_url": "http://x"},
            "not dimensions of the stream's rubric",
        ),
        ({"name": "a", "template": "hcs_rubric", "base_url": "http://x"}, "judges[1].model: the model"),
        (
            {"name": "a", "template": "hcs_rubric", "model": "m", "provider": "acme"},
            "judges[1].provider: 'acme' is not one of openai, anthropic",
        ),
        (
            {"name": "a", "template": "hcs_rubric", "model": "m"},
            "judges[1].base_url: the openai provider needs",
        ),
        (
            {"name": "a", "template": "hcs_rubric", "model": "m", "base_url": "http://x", "key_env": "HOME"},
            "judges[1].key_env: HOME is not one of",
        ),
        (
            {
                "name": "a",
                "template": "hcs_rubric",
                "model": "m",
                "base_url": "http://x",
                "max_cost_per_day": 5,
            },
            "needs price_in and price_out",
        ),
        (
            {
                "name": "a",
                "template": "hcs_rubric",
                "model": "m",
                "base_url": "http://x",
                "max_cost_per_day": -1,
                "price_in": 1,
            },
            "max_cost_per_day: a number above 0",
        ),
        (
            {"name": "a", "template": "hcs_rubric", "model": "m", "base_url": "http://x", "currency": "€"},
            "judges[1].currency",
        ),
        (
            {"name": "j1", "template": "hcs_rubric", "model": "m", "base_url": "http://x"},
            "judges: a name is given twice",
        ),
    ],
)
def test_create_names_what_is_wrong_with_a_judge_object(api_as, judge, expected):
    response = api_as("researcher").post(
        "/streams", {"name": "runs", "human_rate": 0.1, "window": "day", "judges": ["j1", judge]}
    )
    body = assert_problem(response, 422)
    text = body["detail"] + " ".join(e["message"] for e in body["errors"])
    assert expected in text, text
    assert not Stream.objects.exists()


def test_a_judge_that_is_neither_a_name_nor_an_object_is_named_by_its_key(api_as):
    response = api_as("researcher").post(
        "/streams", {"name": "runs", "human_rate": 0.1, "window": "day", "judges": ["j1", 3]}
    )
    body = assert_problem(response, 422)
    assert [e["column"] for e in body["errors"]] == ["judges[1]"]
    assert body["errors"][0]["message"] == "A judge name or a judge object ({name, template, model, ...})."
    assert not Stream.objects.exists()


def test_a_judge_object_is_stored_with_its_defaults_and_names_the_judge(api_as):
    judge = {"name": "auto", "template": "hcs_rubric", "model": "m", "base_url": "http://127.0.0.1:9/v1"}
    response = api_as("researcher").post(
        "/streams", {"name": "runs", "human_rate": 0.1, "window": "day", "judges": ["j1", judge]}
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["judges"] == ["j1", "auto"]
    assert body["judge_runs"] == [
        {
            **judge,
            "provider": "openai",
            "key_env": "OPENAI_API_KEY",
            "max_cost_per_day": None,
            "currency": "USD",
            "price_in": 0.0,
            "price_out": 0.0,
        }
    ]
    stream = Stream.objects.get(name="runs")
    assert stream.judge_batch is not None and not stream.judge_batch.is_open
    # A stream with pushed judges only has no judge batch.
    api_as("researcher").post(
        "/streams", {"name": "pushed", "human_rate": 0.1, "window": "day", "judges": ["j1"]}
    )
    assert Stream.objects.get(name="pushed").judge_batch is None


def test_a_trace_from_the_future_is_refused_by_name(api_as, stream):
    import datetime as dt

    from django.utils import timezone

    soon = (timezone.now() + dt.timedelta(minutes=2)).isoformat()
    later = (timezone.now() + dt.timedelta(hours=1)).isoformat()
    body = (
        api_as("researcher")
        .post("/streams/prod-chat/traces", {"traces": [trace(1, timestamp=soon), trace(2, timestamp=later)]})
        .json()
    )
    assert body["accepted"] == 1 and [e["index"] for e in body["errors"]] == [1]
    assert body["errors"][0]["trace_id"] == "t-2" and "in the future" in body["errors"][0]["problems"][0]
    assert list(Trace.objects.values_list("trace_id", flat=True)) == ["t-1"]


def test_pushed_scores_of_sampled_traces_are_judge_scores_of_their_items(api_as, stream):
    from annotator.models import JudgeScore

    body = (
        api_as("researcher")
        .post("/streams/prod-chat/traces", {"traces": [trace(n) for n in range(20)]})
        .json()
    )
    scores = JudgeScore.objects.select_related("judge", "item")
    assert {s.item.item_id for s in scores} == set(body["sampled"])
    assert {(s.judge.name, s.dimension, s.value, s.item.batch_id) for s in scores} == {
        ("j1", "coherence", 3.0, stream.batch_id)
    }


def test_an_implausibly_old_or_numeric_timestamp_is_refused_by_name(api_as, stream):
    traces = [
        trace(1, timestamp="0001-01-01T00:00:00-12:00"),
        trace(2, timestamp="0001-01-01T00:00:00+01:00"),
        trace(3, timestamp="1999-12-31T23:59:59Z"),
        trace(4, timestamp=1767225600),
        trace(5, timestamp="2000-01-01T00:00:00Z"),
    ]
    body = api_as("researcher").post("/streams/prod-chat/traces", {"traces": traces}).json()
    errors = {e["index"]: e["problems"] for e in body["errors"]}
    assert sorted(errors) == [0, 1, 2, 3] and body["accepted"] == 1
    for index in (0, 1, 2):
        assert "is before 2000-01-01 (UTC)" in errors[index][0], errors[index]
    assert errors[3] == ["`timestamp` must be an ISO 8601 string (e.g. 2026-03-01T12:00:00Z), not int"]
    assert list(Trace.objects.values_list("trace_id", flat=True)) == ["t-5"]


def test_a_traces_body_with_an_unknown_key_or_no_traces_is_refused_whole(api_as, stream):
    client = api_as("researcher")
    body = assert_problem(client.post("/streams/prod-chat/traces", {"traces": [trace(1)], "extra": 1}), 422)
    assert [e["column"] for e in body["errors"]] == ["extra"]
    body = assert_problem(client.post("/streams/prod-chat/traces", {"traces": []}), 422)
    assert body["detail"] == "No traces were given. Nothing was saved."
    assert not Trace.objects.exists()


def test_a_trace_field_longer_than_the_limit_is_named(api_as, stream):
    from annotator.streams.services.ingest import FIELD_MAX

    long = "x" * (FIELD_MAX + 1)
    traces = [
        trace(1, prompt=long),
        trace(2, response=long),
        trace(3, context=long),
        trace(4, metadata={"note": long}),
        trace(5, metadata={"note": "a\x00b"}),
        trace(6, response="x" * FIELD_MAX),
    ]
    body = api_as("researcher").post("/streams/prod-chat/traces", {"traces": traces}).json()
    errors = {e["index"]: e["problems"] for e in body["errors"]}
    assert errors == {
        0: [f"`prompt` is longer than {FIELD_MAX} characters"],
        1: [f"`response` is longer than {FIELD_MAX} characters"],
        2: [f"`context` is longer than {FIELD_MAX} characters"],
        3: [f"`metadata` is longer than {FIELD_MAX} characters as JSON"],
        4: ["`metadata` contains a NUL character"],
    }
    assert list(Trace.objects.values_list("trace_id", flat=True)) == ["t-6"]


RUN = {"name": "auto", "template": "hcs_rubric", "model": "m", "base_url": "http://x"}


@pytest.mark.parametrize(
    "change, column",
    [
        ({"human_rate": True}, "human_rate"),
        ({"human_rate": "0.3"}, "human_rate"),
        ({"human_rate": 1e-300}, "human_rate"),
        ({"k": "3"}, "k"),
        ({"k": True}, "k"),
        ({"k": 1001}, "k"),
        ({"k": 3.0}, "k"),
        ({"window": "7"}, "window"),
        ({"window": 10**12}, "window"),
        ({"window": 1}, "window"),
        ({"window": True}, "window"),
        ({"judges": [f"j{n}" for n in range(21)]}, "judges"),
        ({"judges": "j1"}, "judges"),
        ({"judges": [{**RUN, "concurrency": 10**6}]}, "judges[0].concurrency"),
        ({"judges": [{**RUN, "concurrency": "4"}]}, "judges[0].concurrency"),
        ({"judges": [{**RUN, "temperature": 99}]}, "judges[0].temperature"),
        ({"judges": [{**RUN, "temperature": True}]}, "judges[0].temperature"),
        ({"judges": [{**RUN, "max_tokens": 10**9}]}, "judges[0].max_tokens"),
        ({"rubric": {"name": "x"}}, "rubric"),
        ({"rubric": "hcs"}, "rubric"),
    ],
)
def test_create_takes_values_as_sent_within_bounds_and_names_each_by_its_key(api_as, change, column):
    body = {"name": "strict", "human_rate": 0.3, "k": 3, "window": "day", **change}
    problem = assert_problem(api_as("researcher").post("/streams", body), 422)
    assert [e["column"] for e in problem["errors"]] == [column], problem
    message = problem["errors"][0]["message"]
    # A whole sentence: not the column's name again, not a lower-case fragment, one full stop.
    assert not message[0].islower() and message.endswith(".") and not message.endswith(".."), message
    assert not message.startswith(column + ":"), message
    assert not problem["detail"].endswith(".."), problem["detail"]
    assert not Stream.objects.exists()


def test_create_takes_the_bounds_themselves(api_as):
    client = api_as("researcher")
    body = {
        "name": "edges",
        "human_rate": 1e-6,
        "k": 1000,
        "window": 100_000,
        "judges": [f"j{n}" for n in range(19)] + [{**RUN, "concurrency": 64, "temperature": 2}],
    }
    response = client.post("/streams", body)
    assert response.status_code == 201, response.content
    stream = Stream.objects.get(name="edges")
    assert stream.human_rate == 1e-6 and stream.k == 1000 and stream.window == "100000"
    assert len(stream.judges) == 20 and stream.judge_runs[0]["concurrency"] == 64


ODD = [
    None,
    [],
    "text",
    1,
    {"traces": None},
    {"traces": {}},
    {"traces": "x"},
    {"traces": [None, 1, [], {}]},
    {"traces": [{"trace_id": ["x"], "timestamp": {}, "prompt": 1, "response": None}]},
    {"traces": [{**trace(1), "timestamp": "9999-12-31T23:59:59-12:00"}]},
    {"traces": [{**trace(2), "timestamp": "0001-01-01T00:00:00+14:00"}]},
    {"traces": [{**trace(3), "timestamp": 1e400}]},
    {"traces": [{**trace(4), "metadata": {"\x00": 1}}]},
    {"traces": [{**trace(5), "trace_id": "a\x00b"}]},
    {"traces": [{**trace(6), "judge_scores": [{"judge": [], "dimension": {}, "value": "3"}]}]},
    {"traces": [trace(7)], "traces2": []},
    {"name": "odd", "human_rate": {}, "k": [], "window": None, "judges": [None, [], {}]},
    {"name": ["x"], "human_rate": float("nan"), "window": "day"},
    {"name": "odd", "human_rate": 0.5, "window": "day", "judges": [{"name": 1, "template": [], "model": {}}]},
    {"name": "odd", "human_rate": 0.5, "window": "day", "rubric": {"dimensions": "x"}},
    {"name": "odd", "human_rate": 0.5, "window": "day", "rubric": [1, 2]},
    {"name": "odd", "human_rate": 0.5, "window": {"n": 3}},
    {"name": "odd" * 50, "human_rate": 0.5, "window": "day"},
]


@pytest.mark.parametrize("body", ODD)
@pytest.mark.parametrize("path", ["/streams", "/streams/prod-chat/traces"])
def test_odd_bodies_answer_without_a_server_error_and_save_nothing(api_as, stream, path, body):
    import json

    client = api_as("researcher")
    streams = Stream.objects.count()
    response = client.post(path, json.loads(json.dumps(body, allow_nan=True)))
    assert response.status_code in (200, 400, 422), response.content
    if response.status_code != 200:
        assert Stream.objects.count() == streams and not Trace.objects.exists()
    else:
        assert response.json()["accepted"] == 0 and not Trace.objects.exists()
