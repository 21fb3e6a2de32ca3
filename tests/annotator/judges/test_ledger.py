"""A ledger row before each paid call: a run killed mid-call leaves ``sent`` rows, a rerun shows them as
"sent, outcome unknown" and calls them again only with --retry-unknown; the endpoint is part of the judge."""

from __future__ import annotations

import threading

import pytest

from annotator.judges.engine.client import ChatClient
from annotator.judges.engine.runner import judge_run
from annotator.judges.engine.templates import load_template
from annotator.models import Judge, JudgeCall, JudgeScore
from tests.factories import make_batch
from tests.fake_judge import FakeJudge
from tests.judge_runs import run_judge

RULE = "hub_answer_correctness"


def run(fake, batch, *extra, url=None):
    run_judge(fake, batch, *extra, model="m", url=url)


@pytest.mark.django_db
def test_each_call_is_in_the_ledger_as_sent_while_it_is_in_flight():
    batch = make_batch("fl", n_items=3)
    seen, release = [], threading.Event()

    def reply(prompt):
        if "(answer 0)" not in prompt:
            release.wait(5)  # items 1 and 2 stay in flight until the first answer has been saved
        return '{"score": 1.0}'

    def progress(state):
        if not seen:
            seen.append(dict(JudgeCall.objects.values_list("item__item_id", "status")))
            release.set()

    with FakeJudge(reply) as fake:
        client = ChatClient(base_url=fake.url, model="m", backoff=0.01)
        judge_run(
            batch=batch,
            template=load_template(RULE),
            client=client,
            judge_name="j",
            concurrency=3,
            progress=progress,
        )
    assert seen == [{"fl-0": "ok", "fl-1": "sent", "fl-2": "sent"}]
    assert set(JudgeCall.objects.values_list("status", flat=True)) == {"ok"}


@pytest.mark.django_db
def test_a_rerun_shows_unknown_calls_and_calls_them_only_with_retry_unknown(capsys):
    make_batch("uk", n_items=4)
    with FakeJudge(lambda p: '{"score": 1.0}') as fake:
        run(fake, "uk")
        # what a SIGKILL mid-call leaves: two rows sent, no outcome (their earlier scores stay)
        JudgeCall.objects.filter(item__item_id__in=["uk-1", "uk-3"]).update(
            status=JudgeCall.SENT, raw_output=""
        )
        capsys.readouterr()
        fake.calls = 0
        run(fake, "uk")
        out = capsys.readouterr().out
        assert fake.calls == 0
        assert "2 calls sent, outcome unknown" in out and "uk-1, uk-3" in out and "--retry-unknown" in out
        run(fake, "uk", "--retry-failed")  # failed is not unknown
        assert fake.calls == 0
        run(fake, "uk", "--retry-unknown")
        assert fake.calls == 2
    assert set(JudgeCall.objects.values_list("status", flat=True)) == {"ok"}
    assert JudgeScore.objects.count() == 4


@pytest.mark.django_db
def test_a_key_refused_on_the_first_calls_leaves_no_sent_rows():
    make_batch("fk", n_items=3)
    with FakeJudge(fault=lambda n, p: 401) as fake, pytest.raises(Exception, match="refused the API key"):
        run(fake, "fk")
    assert not JudgeCall.objects.exists()  # nothing answered, nothing paid: a plain rerun calls them


@pytest.mark.django_db
def test_the_same_model_at_another_endpoint_is_another_judge_version(capsys):
    make_batch("ep", n_items=2)
    with FakeJudge(lambda p: '{"score": 1.0}') as one, FakeJudge(lambda p: '{"score": 0.0}') as two:
        run(one, "ep")
        run(one, "ep", url=one.url + "/")  # the same endpoint spelled with a slash
        assert Judge.objects.count() == 1
        run(two, "ep")
    out = capsys.readouterr().out
    assert f"another endpoint ({one.url} before, {two.url} now)" in out
    names = sorted(Judge.objects.values_list("name", flat=True))
    assert len(names) == 2 and names[0] == f"{RULE}/m"
    versioned = Judge.objects.exclude(name=f"{RULE}/m").get()
    assert versioned.params["base_url"] == two.url
    assert sorted(JudgeScore.objects.filter(judge=versioned).values_list("raw_value", flat=True)) == [
        0.0,
        0.0,
    ]


@pytest.mark.django_db
def test_a_judge_run_before_endpoints_were_recorded_keeps_its_version_and_records_the_endpoint(capsys):
    make_batch("old", n_items=2)
    with FakeJudge(lambda p: '{"score": 1.0}') as fake:
        run(fake, "old")
        judge = Judge.objects.get()
        judge.params = {k: v for k, v in judge.params.items() if k != "base_url"}  # as saved before
        judge.save()
        JudgeCall.objects.all().delete()
        run(fake, "old")
    assert Judge.objects.count() == 1
    assert Judge.objects.get().params["base_url"] == fake.url
    assert "its endpoint is now recorded as" in capsys.readouterr().out


def test_credentials_and_query_never_reach_the_judge_identity():
    client = ChatClient(
        base_url="https://user:sk-secret@api.example.com/v1/chat/completions?api-key=sk-x", model="m"
    )
    assert client.display_url == "https://api.example.com/v1"
