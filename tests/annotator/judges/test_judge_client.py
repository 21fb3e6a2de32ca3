"""The judge client against a local endpoint that fails on purpose: what is retried, what ends a run."""

from __future__ import annotations

import time

import pytest

from annotator.judges.engine.client import (
    ChatClient,
    JudgeCallError,
    JudgeRunFatal,
    RunStopped,
    mask_secrets,
    retry_after_seconds,
)
from tests.fake_judge import FakeJudge

MESSAGES = [{"role": "user", "content": "x"}]


def faults(*kinds):
    """The first calls fail with ``kinds`` in turn, later calls succeed."""
    return lambda number, prompt: kinds[number - 1] if number <= len(kinds) else None


@pytest.mark.parametrize("kind", [429, 500, 502, 503, "truncated", "malformed"])
def test_transient_faults_are_retried(kind):
    with FakeJudge(fault=faults(kind, kind)) as fake:
        result = ChatClient(base_url=fake.url, model="m", backoff=0.01).complete(MESSAGES)
    assert result.attempts == 3 and fake.calls == 3
    assert result.text.startswith('{"score": 0.75')
    assert result.tokens_in == 0 and result.tokens_out > 0


def test_retries_give_up_with_the_masked_body():
    with (
        FakeJudge(fault=faults(500, 500, 500)) as fake,
        pytest.raises(JudgeCallError, match="HTTP 500 after 3") as caught,
    ):
        ChatClient(
            base_url=fake.url, model="m", api_key="sk-secret-in-body-123", backoff=0.01, max_retries=2
        ).complete(MESSAGES)
    assert caught.value.attempts == 3 and caught.value.status == 500
    assert "fault 500" in caught.value.body and "sk-secret-in-body-123" not in caught.value.body


def test_a_malformed_200_keeps_its_body():
    with (
        FakeJudge(fault=faults("malformed", "malformed")) as fake,
        pytest.raises(JudgeCallError, match="not a chat completion after 2 attempts") as caught,
    ):
        ChatClient(base_url=fake.url, model="m", backoff=0.01, max_retries=1).complete(MESSAGES)
    assert caught.value.body == "<html>Bad gateway</html>"


@pytest.mark.parametrize(
    ("status", "message"),
    [(401, "refused the API key"), (403, "refused the API key"), (404, "does not know model")],
)
def test_auth_and_model_errors_are_fatal_at_once(status, message):
    with (
        FakeJudge(fault=faults(status, status)) as fake,
        pytest.raises(JudgeRunFatal, match=message) as caught,
    ):
        ChatClient(base_url=fake.url, model="gpt-nope", api_key="sk-abcdefghijkl", backoff=0.01).complete(
            MESSAGES
        )
    assert fake.calls == 1
    assert "sk-abcdefghijkl" not in str(caught.value)


def test_a_400_is_not_retried():
    with FakeJudge(fault=faults(400)) as fake, pytest.raises(JudgeCallError, match="HTTP 400"):
        ChatClient(base_url=fake.url, model="m", backoff=0.01).complete(MESSAGES)
    assert fake.calls == 1


def test_the_timeout_is_a_deadline_for_the_whole_body():
    # one byte every 0.2 s of a ~150-byte body: each read is quick, the whole body would take 30 s
    with FakeJudge(fault=faults("trickle"), trickle=0.2) as fake:
        client = ChatClient(base_url=fake.url, model="m", timeout=1.0, max_retries=0)
        started = time.monotonic()
        with pytest.raises(JudgeCallError, match="within the 1 s deadline"):
            client.complete(MESSAGES)
    assert time.monotonic() - started < 5  # the whole body would take 30 s


def test_backoff_is_exponential_with_jitter_and_honours_retry_after():
    waits = []
    with FakeJudge(fault=faults(502, 502, 502, 429)) as fake:
        client = ChatClient(
            base_url=fake.url, model="m", backoff=0.5, max_backoff=30, max_retries=4, sleep=waits.append
        )
        assert client.complete(MESSAGES).attempts == 5
    # full jitter: each wait is random below a ceiling that doubles; the 429 said Retry-After: 0
    assert 0 <= waits[0] <= 0.5 and 0 <= waits[1] <= 1.0 and 0 <= waits[2] <= 2.0
    assert waits[3] == 0


def test_retry_after_reads_seconds_and_http_dates():
    assert retry_after_seconds("7") == 7.0
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:10 GMT", now=1445412480.0) == 10.0
    assert retry_after_seconds("soon") is None and retry_after_seconds(None) is None


def test_a_stop_during_a_retry_wait_ends_the_call_without_another_attempt():
    with FakeJudge(fault=faults(500, 500, 500)) as fake:
        client = ChatClient(base_url=fake.url, model="m", backoff=5.0, max_backoff=5.0)
        client.sleep = lambda seconds: client.stop.set()
        with pytest.raises(RunStopped):
            client.complete(MESSAGES)
    assert fake.calls == 1


def test_mask_secrets():
    assert mask_secrets("key sk-live-abcdef123456 and Bearer abc.def-123456 and mine", "mine") == (
        "key sk-*** and Bearer *** and ***"
    )


def test_a_closed_client_after_a_stop_drops_the_call_quietly():
    class StopSetDuringTheCall:  # not set when the attempt starts, set by the time the request fails
        answers = iter([False, True, True])

        def is_set(self):
            return next(self.answers)

    with FakeJudge() as fake:
        client = ChatClient(base_url=fake.url, model="m")
        client.complete(MESSAGES)
        client.close()  # what a second Ctrl-C does to the calls in flight
        client.stop = StopSetDuringTheCall()
        with pytest.raises(RunStopped, match="dropped"):
            client.complete(MESSAGES)
