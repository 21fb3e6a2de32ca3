"""The response cache: an identical request (provider, base URL, model, parameters, messages, sample) is served
from the stored call with 0 paid calls, for a second judge name, a --force rerun and another batch."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from annotator.models import Judge, JudgeCall, JudgeScore
from tests.factories import make_batch
from tests.fake_anthropic import FakeAnthropic
from tests.fake_judge import FakeJudge
from tests.judge_runs import run_judge

RULE = "hub_answer_correctness"


def _scores(judge):
    return sorted(
        JudgeScore.objects.filter(judge__name=judge).values_list("item__item_id", "dimension", "value")
    )


@pytest.mark.django_db
def test_a_second_judge_a_forced_rerun_and_another_batch_pay_nothing(capsys):
    make_batch("c1", n_items=4)
    with FakeJudge() as fake:
        run_judge(fake, "c1", "--judge", "A")
        assert fake.calls == 4
        capsys.readouterr()
        run_judge(fake, "c1", "--judge", "B")
        assert fake.calls == 4
        out, err = capsys.readouterr()
        assert "0 paid calls, 4 served from the cache" in out and "cached 4" in err
        run_judge(fake, "c1", "--judge", "A", "--force")
        assert fake.calls == 4
    assert _scores("B") == [(i, d, v) for i, d, v in _scores("A")] and len(_scores("B")) == 4
    assert JudgeCall.objects.filter(judge__name="B", cached=True).count() == 4
    assert JudgeCall.objects.filter(judge__name="A", cached=True).count() == 4  # the forced rerun
    # Another batch with the same items: the rendered prompts are the same, so are the answers.
    make_batch("c2", n_items=4)
    with FakeJudge() as fake:  # a new port is another endpoint: paid
        run_judge(fake, "c2", "--judge", "C")
        assert fake.calls == 4
        make_batch("c3", n_items=4)
        run_judge(fake, "c3", "--judge", "D")
        assert fake.calls == 4


@pytest.mark.django_db
def test_what_differs_is_paid_for():
    make_batch("d1", n_items=3)
    with FakeJudge() as fake:
        run_judge(fake, "d1", "--judge", "A")
        run_judge(fake, "d1", "--judge", "B", "--temperature", "0.5")  # another parameter
        assert fake.calls == 6
        run_judge(fake, "d1", "--judge", "C", model="fake-2")  # another model
        assert fake.calls == 9
        run_judge(fake, "d1", "--judge", "E", "--no-cache")  # opted out
        assert fake.calls == 12
        run_judge(
            fake, "d1", "--judge", "F", "--temperature", "0.5", "--samples", "2"
        )  # sample 0 cached, sample 1 new
        assert fake.calls == 15
        run_judge(fake, "d1", "--judge", "G", "--limit", "2")
        assert fake.calls == 15
    assert JudgeCall.objects.filter(judge__name="E", cached=False).count() == 3


@pytest.mark.django_db
def test_failed_calls_are_not_served_and_anthropic_keys_apart(monkeypatch):
    make_batch("f1", n_items=2)
    with FakeJudge(fault=lambda n, p: 500 if n <= 2 else None) as fake:
        with pytest.raises(CommandError, match="2 calls failed"):
            run_judge(fake, "f1", "--judge", "A", "--max-retries", "0")
        run_judge(fake, "f1", "--judge", "B", "--max-retries", "0")  # a failure is never served: B pays
    assert (
        fake.calls == 4 and JudgeCall.objects.filter(judge__name="B", cached=False, status="ok").count() == 2
    )
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k-123456789")
    with FakeAnthropic() as fake:
        for name in ("X", "Y"):
            call_command(
                "run_judge",
                "f1",
                "--template",
                RULE,
                "--provider",
                "anthropic",
                "--base-url",
                fake.url,
                "--model",
                "claude-test",
                "--judge",
                name,
            )
    assert fake.calls == 2 and Judge.objects.get(name="Y").calls.filter(cached=True).count() == 2


@pytest.mark.django_db
def test_the_judge_card_counts_cache_hits_apart_from_paid_calls():
    from annotator.judges.selectors.card import _configurations

    make_batch("card", n_items=3)
    with FakeJudge() as fake:
        run_judge(fake, "card", "--judge", "A", "--limit", "1")
        run_judge(fake, "card", "--judge", "B")
    [config] = _configurations(Judge.objects.get(name="B"))
    assert (config["calls"], config["paid"], config["cached"]) == (3, 2, 1)
