"""Spend is auditable from the exports: every paid call stays in judge_calls.jsonl (a --force rerun included),
each row says whether it was cached, how the answer was asked for and what bounded it, and the sum of ``cost``
over the rows not served from the cache is the spend the run page and the judge card show."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import socket
import threading

import pytest
from django.urls import reverse

from annotator.judges.selectors.card import judge_spend
from annotator.judges.services import jobs as judge_jobs
from annotator.models import Batch, Job, Judge, JudgeCall, JudgeScore
from annotator.reports.exports.formats import EXPORT_FORMATS, export_chunks
from tests.annotator.judges.test_judges_selector import _study
from tests.factories import make_batch, make_user
from tests.fake_judge import FakeJudge
from tests.judge_runs import run_judge

RULE = "hub_answer_correctness"
COACH = "studio_live_coach_feedback_quality"  # 1–4: logprobs are asked for
PRICE_IN, PRICE_OUT = 2.5, 10.0


def _run(fake, batch, *extra, template=RULE):
    prices = ("--price-in", str(PRICE_IN), "--price-out", str(PRICE_OUT))
    run_judge(fake, batch, *prices, *extra, template=template, model="m")


def _calls(batch_name: str) -> list[dict]:
    batch = Batch.objects.get(name=batch_name)
    text = "".join(export_chunks(EXPORT_FORMATS["judge_calls.jsonl"], batch=batch))
    return [json.loads(line) for line in text.splitlines()]


@pytest.mark.django_db
def test_force_keeps_the_paid_calls_it_supersedes_and_cached_calls_cost_nothing():
    """Before: a --force rerun deleted the calls it replaced, so 72 paid calls left 36 rows."""
    make_batch("f", n_items=36)
    with FakeJudge() as fake:
        _run(fake, "f", "--judge", "A")
        _run(fake, "f", "--judge", "A", "--force", "--no-cache")
        _run(fake, "f", "--judge", "B")  # every request served from A's answers
    assert fake.calls == 72
    rows = _calls("f")
    a = [r for r in rows if r["judge"] == "A"]
    assert len(a) == 72 and sum(r["superseded"] for r in a) == 36 and not any(r["cached"] for r in a)
    # The judge's scores come from the current calls only.
    assert JudgeCall.objects.filter(judge__name="A").count() == 36
    assert JudgeScore.objects.filter(judge__name="A").count() == 36
    paid = sum((r["tokens_in"] * PRICE_IN + r["tokens_out"] * PRICE_OUT) / 1e6 for r in a)
    assert sum(r["cost"] for r in a) == pytest.approx(paid, rel=1e-12) and paid > 0
    assert {r["currency"] for r in a} == {"USD"}
    # B's calls were served from the cache: their tokens are kept for information and cost nothing.
    b = [r for r in rows if r["judge"] == "B"]
    assert len(b) == 36 and all(r["cached"] and r["cost"] == 0 and r["tokens_out"] for r in b)
    spend_b = judge_spend(judge=Judge.objects.get(name="B"), batch_id=Batch.objects.get(name="f").pk)
    assert spend_b["calls"] == 0 and spend_b["cost"] == {}
    spend_a = judge_spend(judge=Judge.objects.get(name="A"), batch_id=Batch.objects.get(name="f").pk)
    assert spend_a["calls"] == 72 and spend_a["superseded"] == 36
    assert spend_a["cost"]["USD"] == pytest.approx(sum(r["cost"] for r in rows if not r["cached"]), rel=1e-12)


@pytest.mark.django_db
def test_each_row_says_how_the_answer_was_asked_for_and_what_bounded_it():
    make_batch("lp", n_items=2)

    def reply(prompt):
        return json.dumps({"reason": "Names 2 metrics.", "score": 3, "label": "Very Good"})

    with FakeJudge(reply, score_probs=lambda p: {"3": 0.6, "4": 0.3, "2": 0.1}) as fake:
        _run(fake, "lp", "--judge", "G", "--max-tokens", "300", template=COACH)
        _run(fake, "lp", "--judge", "T", "--no-structured", "--no-logprobs", template=COACH)
        _run(fake, "lp", "--judge", "S", "--no-logprobs", template=COACH)
    rows = {r["judge"]: r for r in _calls("lp")}
    g, t, s = rows["G"], rows["T"], rows["S"]
    assert g["output_mode"] == "logprobs" and g["logprobs"] == 10 and g["max_tokens"] == 300
    assert g["schema"]["schema"]["required"] == ["reason", "score", "label"] or g["schema"]["strict"] is True
    assert (t["output_mode"], t["schema"], t["logprobs"], t["max_tokens"]) == ("text", None, 0, None)
    assert s["output_mode"] == "json_schema" and s["schema"] == g["schema"] and s["logprobs"] == 0
    assert not any(r["cached"] for r in rows.values()) and {r["provider_batch"] for r in rows.values()} == {
        None
    }
    # What the fake received is what the rows say was sent.
    sent = fake.requests[0]["body"]
    assert sent["max_tokens"] == 300 and sent["response_format"]["json_schema"] == g["schema"]


@pytest.mark.django_db
def test_judge_scores_csv_and_the_api_carry_the_logprob_score_and_confidence(api_as):
    make_batch("ls", n_items=2)
    with FakeJudge(
        lambda p: json.dumps({"reason": "ok", "score": 3, "label": "Very Good"}),
        score_probs=lambda p: {"3": 0.6, "4": 0.3, "2": 0.1},
    ) as fake:
        _run(fake, "ls", "--judge", "G", template=COACH)
        _run(fake, "ls", "--judge", "T", "--no-logprobs", template=COACH)
    batch = Batch.objects.get(name="ls")
    text = "".join(export_chunks(EXPORT_FORMATS["judge_scores.csv"], batch=batch))
    rows = list(csv.DictReader(io.StringIO(text)))
    weighted = 1 + 2.2 * 4 / 3  # G-Eval: 3.2 on 1–4, onto the rubric's 1–5
    g = [r for r in rows if r["judge"] == "G"]
    assert g and all(float(r["logprob_score"]) == pytest.approx(weighted) for r in g)
    assert all(float(r["confidence"]) == pytest.approx(0.6) for r in g)
    assert all(r["logprob_score"] == "" and r["confidence"] == "" for r in rows if r["judge"] == "T")
    items = api_as("researcher").get(f"/batches/{batch.pk}/judge-scores").json()["items"]
    by_judge = {(r["judge"], r["item_id"]): r for r in items}
    assert by_judge[("G", "ls-0")]["logprob_score"] == pytest.approx(weighted)
    assert by_judge[("G", "ls-0")]["confidence"] == pytest.approx(0.6)
    assert by_judge[("T", "ls-0")]["logprob_score"] is None and by_judge[("T", "ls-0")]["confidence"] is None


@pytest.mark.django_db(transaction=True)
def test_the_run_page_and_the_card_show_the_spend_the_export_adds_up_to(client, monkeypatch):
    """A run stopped and started again: the job page's cost is both attempts' (before: the last one's), in its
    currency, and it equals the sum of ``cost`` over the export's rows with ``cached`` false, as the card's does."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-web-123456789")
    monkeypatch.setattr(judge_jobs, "POLL_SECONDS", 0.0)
    _study(n_items=30)  # rated by three annotators: the judge gets a card
    user = make_user("res", role="researcher")
    client.force_login(user)
    pressed, lock = [], threading.Lock()

    def reply(prompt):
        with lock:  # "Stop the run", once, during the fifth call
            if fake.calls >= 5 and not pressed:
                pressed.append(Job.objects.update(cancel_requested=True))
        return '{"score": 1.0, "reason": "It answers the question as asked."}'

    form = {
        "batch": "judged",
        "template": RULE,
        "model": "fake-1",
        "key_env": "OPENAI_API_KEY",
        "concurrency": "2",
        "price_in": str(PRICE_IN),
        "price_out": str(PRICE_OUT),
    }
    with FakeJudge(reply, latency=0.05) as fake:
        client.post("/judges/run/", {**form, "base_url": fake.url})
        job = Job.objects.get()
        assert job.state == Job.CANCELLED
        first = job.progress["cost"]
        client.post(f"/jobs/{job.pk}/try-again/")
    job.refresh_from_db()
    assert job.state == Job.DONE and fake.calls == 30
    rows = _calls("judged")
    spent = sum(r["cost"] for r in rows if not r["cached"])
    totals = job.progress["all_attempts"]
    assert totals["attempts"] == 2 and totals["paid"] == 30
    assert totals["cost"] == pytest.approx(spent, rel=1e-9) and job.progress["cost"] < spent and first < spent
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    shown = re.search(r"([0-9.]+) USD over 2 attempts", page)
    assert shown and float(shown.group(1)) == pytest.approx(spent, abs=0.5e-4 + 1e-12)  # shown to 4 places
    judge = Judge.objects.get()
    card = client.get(reverse("judge_card_export", args=[job.params["batch_id"], judge.pk, "json"]))
    assert json.loads(card.content)["spend"]["cost"]["USD"] == pytest.approx(spent, rel=1e-12)
    page = client.get(reverse("judge_card", args=[job.params["batch_id"], judge.pk])).content.decode()
    shown = re.search(
        r"Spend of this version on this batch: <strong>([0-9.]+) USD</strong>\s+over 30 paid calls", page
    )
    assert shown and float(shown.group(1)) == pytest.approx(spent, abs=0.5e-4 + 1e-12)
    spend = judge_spend(judge=judge, batch_id=job.params["batch_id"])
    assert spend["cost"]["USD"] == pytest.approx(spent, rel=1e-12) and spend["calls"] == 30


@pytest.mark.django_db
def test_time_left_goes_away_while_stopping(client):
    make_batch("web", n_items=1)
    user = make_user("res", role="researcher")
    client.force_login(user)
    progress = {
        "total": 10,
        "done": 4,
        "skipped": 0,
        "failed": 0,
        "retries": 0,
        "tokens_in": 1,
        "tokens_out": 1,
    }
    job = Job.objects.create(
        kind=Job.JUDGE_RUN,
        created_by=user,
        label="x",
        params={},
        state=Job.RUNNING,
        worker=f"{socket.gethostname()}:{os.getpid()}",  # alive: the page does not end it
        progress={**progress, "cost": 0.0123, "currency": "EUR", "eta_seconds": 30},
    )
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "Time left" in page and "0.0123 EUR" in page
    Job.objects.filter(pk=job.pk).update(cancel_requested=True)
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "stopping" in page and "Time left" not in page


@pytest.mark.django_db
def test_a_forced_call_that_never_left_gives_the_slot_back_to_the_paid_call():
    """--force writes its ``sent`` row over the paid call; a run stopped before sending it removes the row,
    and the paid call is the item's call again (not lost, not left superseded by nothing)."""
    from annotator.judges.engine.calls import Task
    from annotator.judges.engine.templates import load_template
    from annotator.judges.services.runs import judge_calls_mark_sent, judge_calls_unsend

    make_batch("u", n_items=1)
    with FakeJudge() as fake:
        _run(fake, "u", "--judge", "A")
    paid = JudgeCall.objects.get(judge__name="A")
    task = Task(paid.item, None, paid.prompt)
    judge = Judge.objects.get(name="A")
    kwargs = {"judge": judge, "template": load_template(RULE), "model": "m", "params": {}}
    judge_calls_mark_sent(**kwargs, tasks=[task])
    assert (
        JudgeCall.objects.get(judge=judge).status == "sent"
        and JudgeCall.ledger.filter(superseded=True).count() == 1
    )
    judge_calls_unsend(judge=judge, tasks=[task])
    assert JudgeCall.ledger.filter(judge=judge).count() == 1
    assert JudgeCall.objects.get(judge=judge).pk == paid.pk
