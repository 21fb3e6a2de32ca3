"""The Prolific client: the token header, back-off on 429 and 5xx, one message on 401, and network
failures reported as 'no definite answer'."""

from __future__ import annotations

import httpx
import pytest

from annotator.studies.prolific.client import (
    RETRIES,
    ProlificAuthError,
    ProlificClient,
    ProlificError,
    ProlificUnavailable,
)


def client_with(handler, waits=None, **options):
    return ProlificClient(
        token="tok-123",
        base_url="https://prolific.test",
        transport=httpx.MockTransport(handler),
        sleep=(waits.append if waits is not None else (lambda s: None)),
        **options,
    )


def answers(*responses):
    seen = []

    def handler(request):
        seen.append(request)
        answer = responses[min(len(seen), len(responses)) - 1]
        if isinstance(answer, Exception):
            raise answer
        return answer

    return handler, seen


def test_every_call_sends_the_token_header_and_the_default_url(settings):
    handler, seen = answers(httpx.Response(200, json={"results": []}))
    settings.PROLIFIC_API_TOKEN = "from-env"
    with ProlificClient(transport=httpx.MockTransport(handler)) as client:
        assert client.study_submissions("s1") == []
    assert seen[0].headers["Authorization"] == "Token from-env"
    assert str(seen[0].url) == "https://api.prolific.com/api/v1/studies/s1/submissions/"


def test_429_waits_as_told_then_succeeds():
    waits = []
    handler, seen = answers(
        httpx.Response(429, headers={"Retry-After": "7"}),
        httpx.Response(502),
        httpx.Response(200, json={"id": "b1"}),
    )
    with client_with(handler, waits) as client:
        assert client.bonus_create(study_id="s", csv_bonuses="p,1.00") == {"id": "b1"}
    assert len(seen) == 3 and waits == [7.0, 2.0]  # Retry-After first, then the doubled back-off


def test_5xx_gives_up_after_the_retries_without_a_definite_answer():
    handler, seen = answers(httpx.Response(503))
    with client_with(handler) as client, pytest.raises(ProlificUnavailable, match="503"):
        client.transition("sub", action="APPROVE")
    assert len(seen) == RETRIES + 1


def test_the_pay_call_is_never_repeated_on_a_5xx():
    handler, seen = answers(httpx.Response(500), httpx.Response(202))
    with client_with(handler) as client, pytest.raises(ProlificUnavailable):
        client.bonus_pay("bulk1")
    assert len(seen) == 1


def test_the_pay_call_is_repeated_on_a_429():
    handler, seen = answers(httpx.Response(429, headers={"Retry-After": "0"}), httpx.Response(202))
    with client_with(handler) as client:
        client.bonus_pay("bulk1")
    assert len(seen) == 2


def test_401_is_one_message_naming_the_setting_and_never_the_token():
    handler, seen = answers(httpx.Response(401, json={"detail": "Invalid token"}))
    with client_with(handler) as client, pytest.raises(ProlificAuthError) as info:
        client.study_submissions("s1")
    assert "PROLIFIC_API_TOKEN" in str(info.value) and "tok-123" not in str(info.value)
    assert len(seen) == 1


def test_a_network_failure_is_no_definite_answer():
    handler, _ = answers(httpx.ConnectError("refused"))
    with client_with(handler) as client, pytest.raises(ProlificUnavailable, match="could not be reached"):
        client.bonus_pay("bulk1")


def test_a_4xx_is_a_definite_refusal_with_prolifics_words():
    handler, _ = answers(httpx.Response(400, json={"error": "Insufficient balance"}))
    with client_with(handler) as client, pytest.raises(ProlificError, match="Insufficient balance") as info:
        client.bonus_pay("bulk1")
    assert not isinstance(info.value, ProlificUnavailable)


def test_a_next_page_on_another_host_is_not_followed():
    handler, seen = answers(
        httpx.Response(200, json={"results": [], "_links": {"next": {"href": "https://evil.test/x"}}})
    )
    with client_with(handler) as client, pytest.raises(ProlificError, match="another host"):
        client.study_submissions("s1")
    assert len(seen) == 1


def test_a_body_that_is_not_json_is_an_error_not_a_crash():
    handler, _ = answers(httpx.Response(200, text="<html>maintenance</html>"))
    with client_with(handler) as client, pytest.raises(ProlificError, match="not JSON"):
        client.submission("sub")
