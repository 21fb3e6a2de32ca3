"""What an endpoint refuses is reported as it said it, and adapted to once: temperature, max_tokens,
response_format and logprobs (tests/fake_judge.py words its 400s as OpenAI does)."""

from __future__ import annotations

import pytest

from annotator.judges.engine.client import (
    ChatClient,
    JudgeCallError,
    JudgeRunFatal,
    endpoint_said,
    refused_param,
)
from tests.fake_judge import REFUSALS, FakeJudge

MESSAGES = [{"role": "user", "content": "Rate this."}]
SCHEMA = {"type": "json_schema", "json_schema": {"name": "t", "strict": True, "schema": {"type": "object"}}}


def client(fake, **kw):
    return ChatClient(base_url=fake.url, model="o-mini", backoff=0.01, **kw)


def test_a_model_refusing_temperature_zero_is_called_without_it_and_the_user_is_told():
    with FakeJudge(refuse={"temperature"}) as fake:
        c = client(fake)
        first, second = c.complete(MESSAGES), c.complete(MESSAGES)
    assert "temperature" not in fake.requests[1]["body"] and fake.requests[0]["body"]["temperature"] == 0.0
    assert (
        len(fake.requests) == 3
    )  # one refused request, then no more refusals: the adaptation holds for the run
    assert first.sent == second.sent == {} and first.attempts == 2 and second.attempts == 1
    assert len(c.notes) == 1
    assert "refused temperature" in c.notes[0] and "does not support 0 with this model" in c.notes[0]
    assert "model's default" in c.notes[0]


def test_refused_max_tokens_becomes_max_completion_tokens():
    with FakeJudge(refuse={"max_tokens"}) as fake:
        result = client(fake, max_tokens=300).complete(MESSAGES)
    assert (
        fake.requests[-1]["body"]["max_completion_tokens"] == 300
        and "max_tokens" not in fake.requests[-1]["body"]
    )
    assert result.sent == {"temperature": 0.0, "max_completion_tokens": 300}


def test_refused_structured_output_and_logprobs_fall_back_to_free_text_without_logprobs():
    with FakeJudge(refuse={"response_format", "logprobs"}) as fake:
        c = client(fake, response_format=SCHEMA, top_logprobs=5)
        result = c.complete(MESSAGES)
    last = fake.requests[-1]["body"]
    assert "response_format" not in last and "logprobs" not in last and "top_logprobs" not in last
    assert result.output_mode == "text" and result.logprobs is None
    assert {n.split(" for ")[0] for n in c.notes} == {
        "The endpoint refused response_format",
        "The endpoint refused logprobs",
    }


def test_an_accepted_schema_is_recorded_as_structured():
    with FakeJudge() as fake:
        result = client(fake, response_format=SCHEMA, top_logprobs=5).complete(MESSAGES)
    body = fake.requests[0]["body"]
    assert body["response_format"] == SCHEMA and body["logprobs"] is True and body["top_logprobs"] == 5
    assert result.output_mode == "json_schema" and result.logprobs  # the fake returns a token list


def test_the_temperature_refusal_is_not_mistaken_for_an_unknown_model():
    said = REFUSALS["temperature"][1]
    assert "model" in said and "not" in said  # what the old check keyed on
    assert refused_param(f'{{"error": {{"message": "{said}", "param": null}}}}') == "temperature"


def test_an_unknown_model_is_still_fatal_and_quotes_the_endpoint():
    def fault(number, prompt):
        return 404

    with (
        FakeJudge(fault=fault) as fake,
        pytest.raises(JudgeRunFatal, match=r"does not know model .*it said: fault 404"),
    ):
        client(fake).complete(MESSAGES)


def test_other_client_errors_say_what_the_endpoint_said():
    with FakeJudge(fault=lambda n, p: 400) as fake, pytest.raises(JudgeCallError) as exc:
        client(fake).complete(MESSAGES)
    assert "HTTP 400; the endpoint said: fault 400" in str(exc.value)


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ('{"error": {"message": "Bad thing"}}', "Bad thing"),
        ('{"detail": "Nope"}', "Nope"),
        ('{"error": "plain"}', "plain"),
        ("<html>gateway</html>", "<html>gateway</html>"),
    ],
)
def test_endpoint_said_reads_common_error_shapes(body, said):
    assert endpoint_said(body) == said


def test_refused_param_reads_the_param_field_and_the_message():
    assert refused_param('{"error": {"message": "x", "param": "top_logprobs"}}') == "logprobs"
    assert (
        refused_param('{"error": {"message": "x", "param": "response_format.json_schema"}}')
        == "response_format"
    )
    assert refused_param('{"detail": "json_schema is not supported by this backend"}') == "response_format"
    assert refused_param('{"error": {"message": "The model gpt-x does not exist", "param": "model"}}') is None


def test_calls_in_flight_refused_together_all_adapt_once():
    from concurrent.futures import ThreadPoolExecutor

    with FakeJudge(refuse={"max_tokens", "temperature"}, latency=0.05) as fake:
        c = client(fake, max_tokens=50)
        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(lambda _: c.complete(MESSAGES), range(8)))
    assert all(r.sent == {"max_completion_tokens": 50} for r in results)
    assert sorted(n.split(" for ")[0] for n in c.notes) == [
        "The endpoint refused max_tokens",
        "The endpoint refused temperature",
    ]
