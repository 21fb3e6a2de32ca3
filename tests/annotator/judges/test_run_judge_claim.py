"""One run per judge at a time: a second run of the same judge is refused before it pays for anything."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.core.management import CommandError
from django.db import connection
from django.utils import timezone

from annotator.models import Judge, JudgeCall
from tests.factories import make_batch
from tests.fake_judge import FakeJudge
from tests.judge_runs import run_judge

RULE = "hub_answer_correctness"


def run(fake, *extra):
    run_judge(fake, "claim", "--judge", "j", "--max-retries", "0", *extra, model="m")


@pytest.mark.django_db
def test_a_live_claim_refuses_a_second_run_and_a_stale_one_is_taken_over():
    make_batch("claim", n_items=3)
    with FakeJudge() as fake:
        run(fake, "--limit", "1")
        judge = Judge.objects.get(name="j")
        assert judge.run_claim == "" and judge.run_claimed_at is None  # released at the end
        Judge.objects.filter(pk=judge.pk).update(run_claim="another-process", run_claimed_at=timezone.now())
        with pytest.raises(CommandError, match="is being run by another process"):
            run(fake)
        assert fake.calls == 1
        Judge.objects.filter(pk=judge.pk).update(run_claimed_at=timezone.now() - timedelta(minutes=10))
        run(fake)  # its process died without releasing: taken over
    assert fake.calls == 3 and JudgeCall.objects.count() == 3
    assert Judge.objects.get(pk=judge.pk).run_claim == ""


@pytest.mark.django_db
def test_a_run_that_stops_on_a_fatal_error_releases_its_claim():
    make_batch("claim", n_items=2)
    with (
        FakeJudge(fault=lambda number, prompt: 401) as fake,
        pytest.raises(CommandError, match="the run stopped"),
    ):
        run(fake)
    assert Judge.objects.get(name="j").run_claim == ""


@pytest.mark.django_db(transaction=True)
def test_two_runs_at_once_pay_for_each_item_once():
    make_batch("claim", n_items=6)
    started, refused = threading.Event(), []

    def reply(prompt):
        started.set()
        return '{"score": 1.0, "reason": "ok"}'

    with FakeJudge(reply, latency=0.5) as fake:  # the first run takes ~3 s: the second starts well within it

        def first():
            try:
                run(fake, "--concurrency", "1")
            finally:
                connection.close()

        thread = threading.Thread(target=first)
        thread.start()
        assert started.wait(10)
        try:
            run(fake)
        except CommandError as exc:
            refused.append(str(exc))
        thread.join(30)
    assert refused and "is being run by another process" in refused[0]
    assert JudgeCall.objects.count() == 6 and max(fake.answered.values()) == 1 and fake.calls == 6


@pytest.mark.django_db
def test_a_run_whose_claim_was_taken_over_stops_calling(monkeypatch):
    from annotator.judges.engine import runner

    make_batch("claim", n_items=8)
    renew = runner.judge_run_renew

    def renew_after_a_takeover(judge, token):  # the run loop's thread: the same connection as the run
        if fake.calls >= 2:  # meanwhile another process took the judge over (its claim went stale)
            Judge.objects.filter(pk=judge.pk).update(run_claim="the-other-run", run_claimed_at=timezone.now())
        return renew(judge, token)

    monkeypatch.setattr(runner, "CLAIM_RENEW_SECONDS", 0.0)  # renew at every look
    monkeypatch.setattr(runner, "judge_run_renew", renew_after_a_takeover)
    with FakeJudge(latency=0.2) as fake:
        run(fake, "--concurrency", "1")
    assert fake.calls < 8 and JudgeCall.objects.count() == fake.calls  # stopped; what it paid for is saved
    assert Judge.objects.get(name="j").run_claim == "the-other-run"  # and it left the other run's claim alone
