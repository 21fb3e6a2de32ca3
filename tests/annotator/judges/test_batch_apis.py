"""run_judge --batch through local fakes of OpenAI's Batch API and Anthropic's Message Batches: submitted once,
polled, fetched and stored as calls; the JudgeCall ledger is the resume state of a stopped run."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from annotator.models import JudgeCall, JudgeScore
from tests.factories import make_batch
from tests.fake_batch_apis import FakeBatchAPIs

RULE = "hub_answer_correctness"


def _run(fake, batch, *extra, provider="openai"):
    base = fake.url + ("/v1" if provider == "openai" else "")
    call_command(
        "run_judge",
        batch,
        "--template",
        RULE,
        "--provider",
        provider,
        "--base-url",
        base,
        "--model",
        "m-1",
        "--batch",
        "--batch-poll",
        "0.01",
        *extra,
    )


@pytest.mark.django_db
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_batch_is_submitted_polled_and_stored_as_calls(provider, monkeypatch, capsys):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k-123456789")
    make_batch("b", n_items=5)
    with FakeBatchAPIs(polls=3) as fake:
        _run(fake, "b", "--judge", "J", provider=provider)
        assert fake.created == 1 and fake.answered == 5
        calls = list(JudgeCall.objects.filter(judge__name="J"))
        assert [c.status for c in calls] == ["ok"] * 5 and {(c.tokens_in, c.tokens_out) for c in calls} == {
            (100, 10)
        }
        assert JudgeScore.objects.filter(judge__name="J").count() == 5
        assert "5/5 calls" in capsys.readouterr().out
        # The answers feed the response cache like any call.
        _run(fake, "b", "--judge", "K", provider=provider)
        assert fake.created == 1 and JudgeCall.objects.filter(judge__name="K", cached=True).count() == 5


@pytest.mark.django_db
def test_a_stopped_run_leaves_the_batch_in_the_ledger_and_a_rerun_fetches_it(monkeypatch):
    from annotator.judges.engine import batch_runner

    make_batch("r", n_items=4)
    with FakeBatchAPIs(polls=1000) as fake:
        real_state = batch_runner.batches_for

        def stopping(client):
            api = real_state(client)
            original = api.state

            def state(batch_id):
                client.stop.set()  # Ctrl-C while the provider works
                return original(batch_id)

            api.state = state
            return api

        monkeypatch.setattr(batch_runner, "batches_for", stopping)
        _run(fake, "r", "--judge", "J")
        rows = list(JudgeCall.objects.filter(judge__name="J"))
        assert [r.status for r in rows] == ["sent"] * 4 and {r.provider_batch for r in rows} == {"batch_1"}
        monkeypatch.setattr(batch_runner, "batches_for", real_state)
        fake.polls = 0
        _run(fake, "r", "--judge", "J")
    assert fake.created == 1 and fake.answered == 4  # nothing submitted twice
    # The answered calls keep the batch they came from: the export says where each was paid.
    assert list(
        JudgeCall.objects.filter(judge__name="J")
        .values_list("status", "provider_batch")
        .order_by()
        .distinct()
    ) == [("ok", "batch_1")]


@pytest.mark.django_db
def test_expired_requests_are_sent_again_by_a_rerun(capsys):
    first = make_batch("e", n_items=4).items.order_by("position").first().pk
    with FakeBatchAPIs(polls=1, expire=lambda cid: cid == f"{first}-0-0" and fake.created == 1) as fake:
        _run(fake, "e", "--judge", "J")
        assert JudgeCall.objects.filter(judge__name="J").count() == 3  # the expired one left no row
        assert "1 request the batch did not answer" in capsys.readouterr().out
        _run(fake, "e", "--judge", "J")
    assert fake.created == 2 and JudgeCall.objects.filter(judge__name="J", status="ok").count() == 4


@pytest.mark.django_db
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_requests_past_the_providers_limit_go_in_several_batches(provider, monkeypatch):
    """OpenAI takes 50,000 requests a batch and Anthropic 100,000: a run with more splits them (a limit of 3 here)."""
    from annotator.judges.providers.batches import AnthropicBatches, OpenAIBatches

    assert (OpenAIBatches.max_requests, AnthropicBatches.max_requests) == (50_000, 100_000)
    api = OpenAIBatches if provider == "openai" else AnthropicBatches
    monkeypatch.setattr(api, "max_requests", 3)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k-123456789")
    make_batch("big", n_items=7)
    with FakeBatchAPIs(polls=1) as fake:
        _run(fake, "big", "--judge", "J", provider=provider)
        sizes = sorted(len(b["requests"]) for b in fake.batches.values())
        assert fake.created == 3 and sizes == [1, 3, 3] and fake.answered == 7
    calls = list(JudgeCall.objects.filter(judge__name="J"))
    assert [c.status for c in calls] == ["ok"] * 7
    # Each answered call names the batch it was paid in: three batches, as many calls in each as were sent.
    per_batch = sorted(
        sum(1 for c in calls if c.provider_batch == b) for b in {c.provider_batch for c in calls}
    )
    assert per_batch == [1, 3, 3]
