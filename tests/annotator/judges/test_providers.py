"""The provider registry: Anthropic's Messages API spoken natively (tests/fake_anthropic.py), one client_for for
the command and the web form, each provider's errors mapped to the run's messages, bad input refused early."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from annotator.judges.engine.client import JudgeCallError, JudgeRunFatal
from annotator.judges.providers import JUDGE_PROVIDERS, UnknownProvider, client_for
from annotator.judges.providers.anthropic import AnthropicClient
from annotator.models import Judge, JudgeCall, JudgeScore
from tests.factories import make_batch
from tests.fake_anthropic import FakeAnthropic
from tests.fake_judge import FakeJudge

RULE = "hub_answer_correctness"
KEY = "sk-ant-test-123456789"


def _anthropic(fake, batch, *extra):
    call_command(
        "run_judge",
        batch,
        "--template",
        RULE,
        "--provider",
        "anthropic",
        "--base-url",
        fake.url,
        "--model",
        "claude-test",
        "--backoff",
        "0.01",
        "--max-retries",
        "2",
        *extra,
    )


def test_the_registry_lists_both_providers_and_client_for_builds_each():
    assert list(JUDGE_PROVIDERS) == ["openai", "anthropic"]
    assert type(client_for({"base_url": "http://x/v1", "model": "m"})).provider == "openai"
    client = client_for({"provider": "anthropic", "model": "claude", "max_tokens": 50})
    assert isinstance(client, AnthropicClient) and client.url == "https://api.anthropic.com/v1/messages"
    with pytest.raises(UnknownProvider, match="known providers: openai, anthropic"):
        client_for({"provider": "cohere", "model": "m", "base_url": "http://x"})


def test_anthropic_request_shape_headers_and_usage():
    with FakeAnthropic(key=KEY) as fake:
        client = client_for(
            {"provider": "anthropic", "base_url": fake.url, "model": "claude-test"}, api_key=KEY
        )
        result = client.complete(
            [{"role": "system", "content": "Be fair."}, {"role": "user", "content": "x" * 40}]
        )
        client.close()
    sent = fake.requests[0]
    assert sent["path"] == "/v1/messages" and sent["key"] == KEY and sent["version"] == "2023-06-01"
    assert sent["body"]["system"] == "Be fair."
    assert sent["body"]["messages"] == [{"role": "user", "content": [{"type": "text", "text": "x" * 40}]}]
    assert sent["body"]["max_tokens"] == 1024 and sent["body"]["temperature"] == 0.0
    assert result.text.startswith('{"score": 0.75') and (result.tokens_in, result.tokens_out) == (12, 11)


@pytest.mark.parametrize(
    "setup, error, said",
    [
        ({"key": "other-key"}, JudgeRunFatal, "refused the API key (HTTP 401, authentication_error)"),
        (
            {"unknown": frozenset({"claude-test"})},
            JudgeRunFatal,
            "does not know model \u201cclaude-test\u201d",
        ),
        ({"fault": lambda n: 429}, JudgeCallError, "HTTP 429 (rate_limit_error) after 3 attempts"),
        ({"fault": lambda n: 529}, JudgeCallError, "HTTP 529 (overloaded_error) after 3 attempts"),
        ({"refuses": lambda p: True}, JudgeCallError, "the model refused to answer"),
    ],
)
def test_anthropic_errors_become_the_runs_messages(setup, error, said):
    with FakeAnthropic(**setup) as fake:
        client = AnthropicClient(
            base_url=fake.url, model="claude-test", api_key=KEY, max_retries=2, backoff=0.001
        )
        with pytest.raises(error, match=said.replace("(", r"\(").replace(")", r"\)")):
            client.complete([{"role": "user", "content": "hello"}])
        client.close()
    assert fake.calls == (3 if setup.get("fault") else 1)  # retried only what a retry can fix


def test_openai_refusal_field_is_a_failed_call_saying_so():
    import json

    import httpx

    def handler(request):
        return httpx.Response(
            200, json={"choices": [{"message": {"content": None, "refusal": "I can't help."}}]}
        )

    client = client_for({"base_url": "http://fake/v1", "model": "m"})
    client.transport = httpx.MockTransport(handler)
    with pytest.raises(JudgeCallError, match="the model refused to answer: I can't help."):
        client.complete([{"role": "user", "content": json.dumps("hi")}])


@pytest.mark.django_db
def test_run_judge_with_anthropic_scores_and_the_provider_makes_a_judge_version(monkeypatch, capsys):
    make_batch("anth", n_items=3)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with FakeAnthropic(key=KEY) as fake:
        _anthropic(fake, "anth", "--judge", "J")
    judge = Judge.objects.get(name="J")
    assert judge.params["provider"] == "anthropic" and judge.params["base_url"] == fake.url
    assert JudgeScore.objects.filter(judge=judge).count() == 3
    assert set(JudgeCall.objects.values_list("tokens_in", flat=True)) != {None}
    # The same name against an OpenAI-compatible endpoint is another configuration: a new judge version.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x-123456789")
    with FakeJudge() as openai_fake:
        call_command(
            "run_judge",
            "anth",
            "--template",
            RULE,
            "--base-url",
            openai_fake.url,
            "--model",
            "claude-test",
            "--judge",
            "J",
        )
    assert Judge.objects.filter(name__startswith="J (template").count() == 1


@pytest.mark.django_db
def test_existing_openai_judges_keep_their_version(monkeypatch):
    make_batch("old", n_items=2)
    with FakeJudge() as fake:
        call_command(
            "run_judge", "old", "--template", RULE, "--base-url", fake.url, "--model", "m", "--judge", "K"
        )
        Judge.objects.filter(name="K").update(
            params={"temperature": 0.0, "base_url": fake.url.removesuffix("/")}
        )
        call_command(
            "run_judge",
            "old",
            "--template",
            RULE,
            "--base-url",
            fake.url,
            "--model",
            "m",
            "--judge",
            "K",
            "--force",
            "--provider",
            "openai",
        )
    assert list(Judge.objects.values_list("name", flat=True)) == ["K"]
    assert "provider" not in Judge.objects.get(name="K").params


@pytest.mark.django_db
def test_bad_input_is_refused_before_any_call(monkeypatch, tmp_path):
    make_batch("bad", n_items=2)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with FakeAnthropic() as fake:
        with pytest.raises(CommandError, match="known providers: openai, anthropic"):
            call_command(
                "run_judge",
                "bad",
                "--template",
                RULE,
                "--provider",
                "gemini",
                "--base-url",
                fake.url,
                "--model",
                "m",
            )
        with pytest.raises(CommandError, match="the API key variable ANTHROPIC_API_KEY is not set"):
            _anthropic(fake, "bad")
        monkeypatch.delenv("MY_KEY", raising=False)
        with pytest.raises(CommandError, match="the API key variable MY_KEY is not set"):
            _anthropic(fake, "bad", "--api-key-env", "MY_KEY")
    assert fake.calls == 0 and not JudgeCall.objects.exists()
