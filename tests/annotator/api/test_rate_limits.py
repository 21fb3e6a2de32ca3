"""The API's limits are counted in the database: one allowance per token across every process,
and failed token attempts limited per address."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.test import Client

from annotator.api.auth import TokenRateThrottle
from annotator.models import RateBucket
from annotator.services.rate_limit import rate_count_add
from tests.annotator.api.conftest import ApiClient, assert_problem, token_for
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def test_the_allowance_is_shared_by_every_process(settings):
    settings.ANNOTATOR_API_RATE = "3/min"
    client = ApiClient(token_for(make_user("r", role="researcher")))
    assert [client.get("/me").status_code for _ in range(2)] == [200, 200]
    # Another worker process has its own throttle object and nothing in memory: it reads the same count.
    other_process = TokenRateThrottle()
    request = client.client.get("/api/v1/me").wsgi_request  # the third request, allowed
    assert not other_process.allow_request(request)  # the fourth, counted by a fresh throttle: refused
    limited = client.get("/me")
    body = assert_problem(limited, 429)
    assert body["type"].endswith("rate-limited") and 1 <= int(limited["Retry-After"]) <= 60
    assert RateBucket.objects.count() == 1  # one row for the token's minute, none per process


def test_the_window_is_the_rates_period():
    then = datetime(2026, 5, 1, 10, 30, 45, tzinfo=UTC)
    first = rate_count_add(key="k", limit=2, period_s=3600, now=then)
    assert (first.count, first.retry_after_s, first.over) == (1, 29 * 60 + 15, False)
    rate_count_add(key="k", limit=2, period_s=3600, now=then.replace(minute=59))
    assert rate_count_add(key="k", limit=2, period_s=3600, now=then.replace(minute=5)).over
    assert rate_count_add(key="k", limit=2, period_s=3600, now=then.replace(hour=11)).count == 1


def test_failed_token_attempts_are_limited_per_address(settings):
    settings.ANNOTATOR_API_TOKEN_FAILURES_PER_MINUTE = 3
    key = token_for(make_user("r", role="researcher"))
    guesser = Client(REMOTE_ADDR="203.0.113.7")
    statuses = [
        guesser.get("/api/v1/me", headers={"Authorization": f"Bearer hcs_guess{n}"}).status_code
        for n in range(3)
    ]
    assert statuses == [401, 401, 401]
    refused = guesser.get("/api/v1/me", headers={"Authorization": f"Bearer {key}"})
    body = assert_problem(refused, 429)  # even a right key, while this address is over the limit
    assert "failed API token attempts" in body["detail"] and int(refused["Retry-After"]) >= 1
    elsewhere = Client(REMOTE_ADDR="198.51.100.9")
    assert elsewhere.get("/api/v1/me", headers={"Authorization": f"Bearer {key}"}).status_code == 200


def test_good_tokens_are_not_counted_as_failures(settings):
    settings.ANNOTATOR_API_TOKEN_FAILURES_PER_MINUTE = 2
    client = ApiClient(token_for(make_user("r", role="researcher")))
    assert {client.get("/me").status_code for _ in range(5)} == {200}


def _database_url() -> str:
    from django.db import connection

    s = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{s['NAME']}"
    return (
        f"postgres://{s['USER']}:{s['PASSWORD']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"
    )


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_four_gunicorn_workers_share_one_allowance():
    import os
    import socket
    import subprocess
    import sys
    import time
    import urllib.error
    import urllib.request
    from pathlib import Path

    from tests.stall_proxy import PORTS

    key = token_for(make_user("r", role="researcher"))
    port = next(p for p in PORTS if socket.socket().connect_ex(("127.0.0.1", p)) != 0)
    env = {
        **os.environ,
        "SECRET_KEY": "rate-test",
        "HTTPS_ONLY": "0",
        "ALLOWED_HOSTS": "127.0.0.1",
        "DATABASE_URL": _database_url(),
        "ANNOTATOR_API_RATE": "5/min",
        "DB_CONN_MAX_AGE": "0",
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "annotator.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "4"],
        cwd=Path(__file__).resolve().parents[3],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while socket.socket().connect_ex(("127.0.0.1", port)) != 0:
            assert server.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        statuses = []
        for _ in range(16):  # new connections: the requests spread over the four workers
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}/api/v1/me",
                headers={"Authorization": f"Bearer {key}", "Connection": "close"},
            )
            try:
                with urllib.request.urlopen(request, timeout=30) as response:
                    statuses.append(response.status)
            except urllib.error.HTTPError as exc:
                statuses.append(exc.code)
        # 5 allowed per minute window, whichever worker answers (at most 10 if the requests straddle two
        # windows); counted per process, the four workers would have allowed all 16.
        assert 5 <= statuses.count(200) <= 10 and statuses.count(429) == 16 - statuses.count(200), statuses
        assert statuses[:5] == [200] * 5
    finally:
        server.terminate()
        server.wait(10)
