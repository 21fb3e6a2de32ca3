"""Judges the worker runs on a stream's traces: through the judges' run path (template, cache, ledger),
sampled traces first, a cost cap per UTC day, and their scores where the series and the report read them."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.db.models import F
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotator.models import Item, JudgeCall, JudgeScore, Stream, Trace, TraceScore
from annotator.streams.services.judging import judges_run_all, spent_today
from tests.annotator.streams.conftest import DIMENSIONS, trace
from tests.factories import make_user
from tests.fake_judge import FakeJudge

pytestmark = pytest.mark.django_db

FIVE = json.dumps({d: {"score": 4, "reason": "fine"} for d in DIMENSIONS})
PRICE = 100.0  # per million tokens, in and out
MAX_TOKENS = 200


def _make(api_as, fake, name="auto-chat", **judge) -> Stream:
    run = {
        "name": "auto",
        "template": "hcs_rubric",
        "model": "fake-1",
        "base_url": fake.url,
        "price_in": PRICE,
        "price_out": PRICE,
        "max_tokens": MAX_TOKENS,
        **judge,
    }
    response = api_as("researcher").post(
        "/streams", {"name": name, "human_rate": 0.5, "k": 3, "window": "day", "judges": ["j1", run]}
    )
    assert response.status_code == 201, response.content
    return Stream.objects.select_related("batch", "judge_batch").get(name=name)


def _push(api_as, name, traces):
    body = api_as("researcher").post(f"/streams/{name}/traces", {"traces": traces}).json()
    assert body["errors"] == [] and body["accepted"] == len(traces), body
    return body


def _page(stream: Stream) -> str:
    client = Client()
    from django.contrib.auth.models import User

    reader = User.objects.filter(username="page-reader").first()
    client.force_login(reader or make_user("page-reader", role="researcher"))
    response = client.get(reverse("stream_page", args=[stream.name]))
    assert response.status_code == 200
    return response.content.decode()


def _now_traces(n: int) -> list[dict]:
    """``n`` traces of today (the day the cap counts) with no pushed score."""
    base = timezone.now().replace(microsecond=0) - dt.timedelta(hours=1)
    return [
        {
            "trace_id": f"t-{i}",
            "timestamp": (base + dt.timedelta(seconds=i)).isoformat(),
            "prompt": f"Question {i}?",
            "response": f"Answer {i}.",
        }
        for i in range(n)
    ]


def test_the_worker_scores_every_trace_once_and_the_report_shows_the_sampled_ones(
    api_as, client, django_capture_on_commit_callbacks
):
    with FakeJudge(lambda prompt: FIVE) as fake:
        stream = _make(api_as, fake)
        assert stream.judges == ["j1", "auto"] and stream.judge_runs[0]["template"] == "hcs_rubric"
        assert stream.judge_batch is not None and not stream.judge_batch.is_open
        # Ingest queues the run after its commit; the tests' task backend runs it at once.
        with django_capture_on_commit_callbacks(execute=True):
            body = _push(api_as, "auto-chat", [trace(n) for n in range(12)])
        sampled = set(body["sampled"])
        assert 0 < len(sampled) < 12
        assert fake.calls == 12
        # Every trace has the judge's five scores, on the rubric's scale.
        scores = TraceScore.objects.filter(stream=stream, judge="auto")
        assert scores.count() == 12 * 5 and set(scores.values_list("value", flat=True)) == {4.0}
        assert set(scores.values_list("trace__trace_id", flat=True)) == {f"t-{n}" for n in range(12)}
        # Sampled traces were scored as the human batch's items, the others in the closed judge batch.
        calls = JudgeCall.objects.select_related("item")
        assert {c.item.batch_id for c in calls if c.item.item_id in sampled} == {stream.batch_id}
        assert {c.item.batch_id for c in calls if c.item.item_id not in sampled} == {stream.judge_batch_id}
        assert calls.count() == 12 and all(c.status == "ok" and c.cost > 0 for c in calls)
        assert Item.objects.filter(batch=stream.judge_batch).count() == 12 - len(sampled)
        # The stream batch's report lists both judges: the run one and the pushed one (j1, on sampled items).
        on_batch = JudgeScore.objects.filter(item__batch=stream.batch)
        assert set(on_batch.filter(judge__name="auto").values_list("item__item_id", flat=True)) == sampled
        assert set(on_batch.filter(judge__name="j1").values_list("item__item_id", flat=True)) == sampled
        client.force_login(make_user("res-report", role="researcher"))
        page = client.get(reverse("report_judges", args=[stream.batch_id])).content.decode()
        assert "auto" in page and "j1" in page and "No LLM-judge scores" not in page
        # A second run pays nothing again: no call, no new ledger row.
        days = judges_run_all(stream_id=stream.pk)
        assert fake.calls == 12 and JudgeCall.ledger.count() == 12
        assert days[0].scored == 0 and days[0].left == 0 and not days[0].capped
        # The run is visible with the stream's settings.
        status = api_as("researcher").get("/streams/auto-chat").json()["judge_runs"][0]["status"]
        assert status["left"] == 0 and status["spent_today"] == pytest.approx(sum(c.cost for c in calls))


def test_the_daily_cap_stops_calls_sampled_first_and_the_rest_wait_for_the_next_day(api_as):
    with FakeJudge(lambda prompt: FIVE) as fake:
        stream = _make(api_as, fake, concurrency=1)
        traces = _now_traces(30)
        body = _push(api_as, "auto-chat", traces)  # no commit in this test: the run is started below
        assert fake.calls == 0
        days = judges_run_all(stream_id=stream.pk)
        assert fake.calls == 30 and not days[0].capped
        per_call = max(c.cost for c in JudgeCall.objects.all())
    # Another stream with the same traces and a cap of about four calls a day.
    with FakeJudge(lambda prompt: FIVE) as fake:
        cap = 4.5 * per_call
        capped = _make(api_as, fake, name="capped", max_cost_per_day=cap, concurrency=1, model="fake-2")
        _push(api_as, "capped", traces)
        sampled = {t.trace_id for t in Trace.objects.filter(stream=capped, sampled=True)}
        assert len(sampled) > 5
        now = timezone.now()
        day1 = judges_run_all(stream_id=capped.pk, now=now)[0]
        bound = MAX_TOKENS * PRICE / 1e6  # one call's output at most past the cap (concurrency 1)
        assert day1.capped and 0 < day1.scored < 30 and day1.left == 30 - day1.scored
        assert day1.spent_today == pytest.approx(spent_today(capped, "auto", now))
        assert day1.spent_today <= cap + bound
        assert fake.calls == day1.scored
        scored = set(TraceScore.objects.filter(stream=capped).values_list("trace__trace_id", flat=True))
        assert scored <= sampled  # the sampled traces first: calibration needs them
        # The same day again: the cap is spent, nothing is called.
        again = judges_run_all(stream_id=capped.pk, now=now)[0]
        assert again.capped and again.scored == 0 and fake.calls == day1.scored
        status = api_as("researcher").get("/streams/capped").json()["judge_runs"][0]["status"]
        assert status["capped"] and status["left"] == 30 - day1.scored and "cap" in status["note"]
        # The stream page says so too, with the day's spend against the cap.
        page = _page(capped)
        assert f"Today's cap is reached: {30 - day1.scored} waiting for the next UTC day." in page
        assert f"{day1.spent_today:.4f} USD" in page and "fake-2" in page
        # Said once: the status note's own sentence is not printed under the page's; why a run stops below
        # its cap is said in one clause; the waiting count is the last run's.
        assert page.count("cap is reached") == 1 and status["note"] not in page
        assert "holds a reservation of its input and max_tokens output tokens until paid" in page
        assert "Waiting at the last run" in page and "is spent (" not in status["note"]
        # On a later day the page does not call that day's cap today's.
        runs = Stream.objects.get(pk=capped.pk).judge_runs
        runs[0]["status"]["day"] = "2026-01-01"
        Stream.objects.filter(pk=capped.pk).update(judge_runs=runs)
        later = _page(Stream.objects.get(pk=capped.pk))
        assert "Today's cap" not in later
        assert f"The cap of 2026-01-01 (UTC) was reached: {30 - day1.scored} traces waited" in later
        runs[0]["status"]["day"] = day1.day
        Stream.objects.filter(pk=capped.pk).update(judge_runs=runs)
        # Each next day spends up to the cap again, until every trace is scored; nothing is paid twice. A day
        # passes by moving the ledger's calls a day back: the runner stamps new calls with the real time.
        total = day1.scored
        for _ in range(30):
            if total == 30:
                break
            JudgeCall.ledger.update(created_at=F("created_at") - dt.timedelta(days=1))
            result = judges_run_all(stream_id=capped.pk)[0]
            assert 0 < result.spent_today <= cap + bound and result.scored
            assert result.capped == (total + result.scored < 30)
            total += result.scored
        assert total == 30 == Trace.objects.filter(stream=capped, scores__judge="auto").distinct().count()
        assert (
            fake.calls
            == 30
            == JudgeCall.ledger.filter(item__batch__in=[capped.batch, capped.judge_batch]).count()
        )
        assert body["accepted"] == 30


def test_an_unreadable_reply_scores_nothing_and_says_why(api_as):
    with FakeJudge(lambda prompt: '{"score": 4}') as fake:  # one number, not the five dimensions
        stream = _make(api_as, fake)
        _push(api_as, "auto-chat", _now_traces(4))
        day = judges_run_all(stream_id=stream.pk)[0]
        assert fake.calls == 4 and day.scored == 0 and day.unscored == 4 and day.left == 0
        assert not TraceScore.objects.filter(judge="auto").exists()
        assert set(JudgeCall.objects.values_list("status", flat=True)) == {"unreadable"}
        # Not called again on the next run: the ledger has their answers (a failed call is not retried).
        judges_run_all(stream_id=stream.pk)
        assert fake.calls == 4


def test_pushed_scores_for_a_judge_the_worker_runs_are_refused(api_as):
    with FakeJudge(lambda prompt: FIVE) as fake:
        _make(api_as, fake)
    bad = {**trace(1), "judge_scores": [{"judge": "auto", "dimension": "coherence", "value": 3}]}
    body = api_as("researcher").post("/streams/auto-chat/traces", {"traces": [bad]}).json()
    assert body["accepted"] == 0 and "run by the worker" in body["errors"][0]["problems"][0]


def test_unreadable_calls_do_not_starve_new_traces_and_the_task_works_through_a_backlog(api_as, monkeypatch):
    from annotator.streams import tasks
    from annotator.streams.services import judging

    monkeypatch.setattr(judging, "RUN_CHUNK", 2)  # runs of two traces: the backlog takes several
    bad = {f"Question {i}?" for i in range(3)}
    with FakeJudge(lambda prompt: '{"score": 4}' if any(q in prompt for q in bad) else FIVE) as fake:
        stream = _make(api_as, fake)
        _push(api_as, "auto-chat", _now_traces(3))
        # Each run queues the next while traces wait; the tests' backend runs them one inside the other.
        assert tasks.stream_judges_run.enqueue(stream_id=stream.pk).return_value == 0
        assert fake.calls == 3 and not TraceScore.objects.exists()
        _push(api_as, "auto-chat", [{**t, "trace_id": f"new-{i}"} for i, t in enumerate(_now_traces(8)[3:])])
        tasks.stream_judges_run.enqueue(stream_id=stream.pk)
        # The three unreadable traces are not handed to the runner again, so the five new ones all run.
        assert fake.calls == 8
        scored = set(TraceScore.objects.values_list("trace__trace_id", flat=True))
        assert scored == {f"new-{i}" for i in range(5)}
        status = Stream.objects.get(pk=stream.pk).judge_runs[0]["status"]
        assert status["left"] == 0 and not Stream.objects.get(pk=stream.pk).judges_run_queued


def test_a_trace_too_large_for_the_day_s_cap_is_skipped_and_the_others_are_scored(api_as):
    from annotator.judges.engine.budget import input_tokens
    from annotator.judges.engine.planning import render_items
    from annotator.judges.engine.templates import load_template

    with FakeJudge(lambda prompt: FIVE) as fake:
        stream = _make(api_as, fake, max_cost_per_day=0.5, concurrency=1)
        traces = _now_traces(8)
        for t in traces[:3]:
            t["response"] = "x" * 40_000  # about 10,000 input tokens: 1 USD at 100 per million
        _push(api_as, "auto-chat", traces)
        big = Item(item_id="t-0", prompt="Question 0?", response="x" * 40_000)
        messages = render_items([big], load_template("hcs_rubric"), stream.batch.rubric_obj)[0].messages
        reserve = (input_tokens(messages) + MAX_TOKENS) * PRICE / 1e6
        assert reserve > 0.5  # the call alone cannot fit the day's cap, whatever was spent
        day = judges_run_all(stream_id=stream.pk)[0]
        # Before, the first large trace in the run's order ended the run, on every day, with nothing spent.
        assert fake.calls == 5 and day.scored == 5 and day.left == 0 and not day.capped
        assert day.too_large == 3 and sorted(day.too_large_ids) == ["t-0", "t-1", "t-2"]
        assert not TraceScore.objects.filter(trace__trace_id__in=["t-0", "t-1", "t-2"]).exists()
        assert "3 traces are too large for the cap and not called: trace t-" in day.note
        assert (
            f"call \u2248 {reserve:.4f} USD (its input and max_tokens 200 output tokens) > the day's cap of 0.5 USD"
            in day.note
        )
        status = Stream.objects.get(pk=stream.pk).judge_runs[0]["status"]
        assert status["too_large"] == 3 and status["left"] == 0
        # Nothing more to call: the next run calls nothing and the task queues no further run.
        from annotator.streams.services.judging import next_run_at

        again = judges_run_all(stream_id=stream.pk)
        assert fake.calls == 5 and again[0].too_large == 3 and next_run_at(again, timezone.now()) is None


def test_too_large_traces_at_the_head_of_the_order_do_not_take_a_run_s_place(api_as, monkeypatch):
    from annotator.streams.services import judging

    monkeypatch.setattr(judging, "RUN_CHUNK", 2)
    with FakeJudge(lambda prompt: FIVE) as fake:
        stream = _make(api_as, fake, max_cost_per_day=0.5, concurrency=1)
        _push(api_as, "auto-chat", _now_traces(9))
        # The first six in the run's order are made too large (their items' responses, which are rendered).
        order = [row[1] for row in judging._waiting(stream, "auto", set())]
        Item.objects.filter(batch__in=[stream.batch, stream.judge_batch], item_id__in=order[:6]).update(
            response="x" * 40_000
        )
        day = judges_run_all(stream_id=stream.pk)[0]
        # A run's worth (2) is called, however many too-large traces came before them.
        assert day.scored == 2 and fake.calls == 2 and day.left == 1 and day.too_large == 6
        days = judges_run_all(stream_id=stream.pk)
        assert days[0].scored == 1 and days[0].left == 0 and days[0].too_large == 6
        assert fake.calls == 3
