"""A database that stalls (accepts, then answers nothing) fails requests fast instead of hanging them:
libpq's connect timeout, the client-side deadline on each call, and /healthz's own bound."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from unittest import mock

import pytest
from django.db import OperationalError, connection

from annotator.db_deadline import deadline_override, stall, watchdog
from tests.stall_proxy import PORTS, StallingProxy

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="libpq's timeouts: PostgreSQL only")


@pytest.fixture
def proxy(db):
    settings_dict = connection.settings_dict
    with StallingProxy((settings_dict["HOST"] or "127.0.0.1", int(settings_dict["PORT"] or 5432))) as running:
        yield running


def _wrapper_through(proxy, *, connect_timeout: int = 2, base: dict | None = None):
    """A second connection to the test database, through the proxy, built as the app builds its own
    (from ``base``, the test database's settings, when ``connection`` is not this thread's to read)."""
    from annotator.pgbackend.base import DatabaseWrapper

    base = base or connection.settings_dict
    settings_dict = {
        **base,
        "HOST": "127.0.0.1",
        "PORT": str(proxy.port),
        "OPTIONS": {**base["OPTIONS"], "connect_timeout": connect_timeout},
    }
    return DatabaseWrapper(settings_dict, alias="through_proxy")


def test_a_call_on_a_stalled_connection_fails_at_its_deadline(proxy, django_db_blocker):
    db = _wrapper_through(proxy)
    with django_db_blocker.unblock(), deadline_override(1):
        try:
            with db.cursor() as cursor:
                cursor.execute("SELECT 1")
                assert cursor.fetchone() == (1,)
            proxy.stall()
            fired = watchdog.fired
            started = time.monotonic()
            with pytest.raises(OperationalError), db.cursor() as cursor:
                cursor.execute("SELECT 2")
            assert time.monotonic() - started < 3
            assert watchdog.fired == fired + 1
        finally:
            db.close()


def test_the_connection_health_check_fails_at_its_deadline(proxy, django_db_blocker):
    db = _wrapper_through(proxy)
    with django_db_blocker.unblock(), deadline_override(1):
        try:
            db.connect()
            assert db.is_usable()
            proxy.stall()
            started = time.monotonic()
            assert not db.is_usable()  # the request then reconnects, bounded by connect_timeout
            assert time.monotonic() - started < 3
        finally:
            db.close()


def test_a_new_connection_to_a_stalled_server_gives_up_at_the_connect_timeout(proxy, django_db_blocker):
    proxy.stall()
    db = _wrapper_through(proxy, connect_timeout=2)
    started = time.monotonic()
    with django_db_blocker.unblock(), pytest.raises(OperationalError):
        db.ensure_connection()
    waited = time.monotonic() - started
    assert waited > 1.5 and waited < 4, waited  # the connect timeout fired, not the stall's end


@pytest.fixture
def breaker(proxy, settings):
    """The stall check at 1 s with a 1 s probe, the probe's fresh connection going through the proxy
    (the app's probe connects as the app does); the breaker closed before and after."""
    settings.DB_STALL_CHECK_S, settings.DB_STALL_PROBE_S = 1, 1
    stall.reset()
    base = dict(connection.settings_dict)
    through = mock.patch(
        "django.db.connections.create_connection",
        side_effect=lambda alias: _wrapper_through(proxy, base=base),
    )
    with through:
        yield stall
    for _ in range(50):  # a probe still running would open the breaker again after the reset
        running = stall._probe
        if running is None or (running.done.is_set() and not (running.inner and running.inner.is_alive())):
            break
        time.sleep(0.1)
    stall.reset()


def test_a_stall_cuts_a_waiting_call_long_before_its_deadline_and_refuses_new_ones(
    breaker, proxy, django_db_blocker, settings
):
    db = _wrapper_through(proxy)
    settings.DB_QUERY_DEADLINE_S = 30  # the per-call deadline alone would hold the call 30 s
    with django_db_blocker.unblock():
        try:
            with db.cursor() as cursor:
                cursor.execute("SELECT 1")
            proxy.stall()
            started = time.monotonic()
            with pytest.raises(OperationalError), db.cursor() as cursor:
                cursor.execute("SELECT 2")
            # a 1 s wait starts the probe; its 1 s without an answer opens the breaker and cuts the call
            assert time.monotonic() - started < 3.5
            assert breaker.open_reason == "Timeout"
            started = time.monotonic()
            with pytest.raises(OperationalError, match="not answering"):
                _wrapper_through(proxy).ensure_connection()  # no connection attempt at all
            assert time.monotonic() - started < 0.5
            proxy.resume()
            deadline = time.monotonic() + 10
            while True:  # the next probe is answered: the breaker closes
                time.sleep(0.3)
                fresh = _wrapper_through(proxy)
                try:
                    fresh.ensure_connection()
                    break
                except OperationalError:
                    assert time.monotonic() < deadline, "the breaker did not close after the stall"
                finally:
                    fresh.close()
            assert breaker.open_reason is None
        finally:
            db.close()


def test_a_connection_opened_as_a_stall_begins_is_left_when_the_stall_is_found(
    breaker, proxy, django_db_blocker
):
    proxy.stall()
    db = _wrapper_through(proxy, connect_timeout=5)  # libpq alone would wait 5 s
    started = time.monotonic()
    with django_db_blocker.unblock(), pytest.raises(OperationalError, match="not answering"):
        db.ensure_connection()
    assert time.monotonic() - started < 3  # a 1 s wait, then a 1 s probe that is not answered
    assert breaker.open_reason == "Timeout"


def test_a_commit_met_by_a_stall_is_cut_with_the_rest(breaker, proxy, django_db_blocker, settings):
    settings.DB_QUERY_DEADLINE_S = 30
    db = _wrapper_through(proxy)
    db.inc_thread_sharing()  # committed from a thread, so that a commit that hangs cannot hang the test
    outcome: dict = {}

    def commit() -> None:
        started = time.monotonic()
        try:
            db.commit()  # psycopg sends COMMIT itself, not through a cursor
            outcome["error"] = None
        except OperationalError as exc:
            outcome["error"] = exc
        outcome["took"] = time.monotonic() - started

    with django_db_blocker.unblock():
        try:
            db.set_autocommit(False)
            with db.cursor() as cursor:
                cursor.execute("SELECT 1")
            proxy.stall()
            committer = threading.Thread(target=commit, daemon=True)
            committer.start()
            committer.join(10)
            assert "took" in outcome, "the commit is still waiting on the stalled database"
            assert isinstance(outcome["error"], OperationalError) and outcome["took"] < 3.5, outcome
        finally:
            proxy.close()  # ends a commit still waiting, so the connection can be closed
            db.close()


def test_a_slow_query_on_a_database_that_answers_is_not_cut(breaker, proxy, django_db_blocker, settings):
    db = _wrapper_through(proxy)
    settings.DB_QUERY_DEADLINE_S = 30
    with django_db_blocker.unblock():
        try:
            with db.cursor() as cursor:
                cursor.execute("SELECT pg_sleep(2.5), 7")  # past the 1 s check: the probe is answered
                assert cursor.fetchone()[1] == 7
            assert breaker.open_reason is None and breaker._probe is not None  # it was probed, and passed
        finally:
            db.close()


@pytest.mark.slow
def test_a_web_server_answers_503_fast_while_the_database_stalls(proxy):
    port = next(p for p in PORTS if p != proxy.port and _free(p))
    env = _server_env(
        proxy,
        DB_STATEMENT_TIMEOUT_S="1",
        DB_QUERY_DEADLINE_S="2",
        DB_CONNECT_TIMEOUT_S="2",
        HEALTHZ_TIMEOUT_S="2",
    )
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "annotator.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "1",
            "--threads",
            "4",
            "--timeout",
            "60",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_for(base + "/healthz")
        assert _get(base + "/healthz")[0] == 200
        assert _get(base + "/api/v1/me", token="hcs_wrong")[0] == 401  # the worker's connection is open now
        proxy.stall()
        for path, token in (("/healthz", None), ("/api/v1/me", "hcs_wrong")):
            started = time.monotonic()
            status, body = _get(base + path, token=token)
            elapsed = time.monotonic() - started
            assert status == 503, (path, body[:300])
            assert elapsed < 6, (path, elapsed)
        assert json.loads(body)["status"] == 503  # the API's problem details, as for any lost connection
        proxy.resume()
        _back_within(base, 10)
    finally:
        server.terminate()
        server.wait(10)


@pytest.mark.slow
def test_thread_workers_answer_every_request_and_healthz_fast_while_the_database_stalls(proxy):
    """make web's worker (ThreadWorker, --threads 2 here) with the per-call deadline at 30 s: twelve
    requests sent at once during a stall, six times the request threads, all answer 503 with
    Retry-After within 5 s, and /healthz, sent while every request thread waits, within 3 s."""
    port = next(p for p in PORTS if p != proxy.port and _free(p))
    env = _server_env(
        proxy,
        # the defaults: a check after 1 s, a 2 s probe, /healthz within 3 s
        unset=("ANNOTATOR_WEB_PROCESS", "DB_STALL_CHECK_S", "DB_STALL_PROBE_S", "HEALTHZ_TIMEOUT_S"),
        DB_STATEMENT_TIMEOUT_S="25",
        DB_QUERY_DEADLINE_S="30",
    )
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "annotator.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "1"]
        + ["--worker-class", "annotator.gunicorn_workers.ThreadWorker", "--threads", "2", "--timeout", "60"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_for(base + "/healthz")
        for _ in range(4):  # both request threads hold an open connection
            assert _get(base + "/api/v1/me", token="hcs_wrong")[0] == 401
        proxy.stall()
        answers: dict[str, tuple[int, float, str | None]] = {}

        def send(key: str, path: str, token: str | None) -> None:
            started = time.monotonic()
            request = urllib.request.Request(
                base + path, headers={"Authorization": f"Bearer {token}"} if token else {}
            )
            try:
                with urllib.request.urlopen(request, timeout=40) as response:
                    status, retry = response.status, response.headers.get("Retry-After")
            except urllib.error.HTTPError as exc:
                status, retry = exc.code, exc.headers.get("Retry-After")
            answers[key] = (status, time.monotonic() - started, retry)

        senders = [
            threading.Thread(target=send, args=(f"r{i}", "/api/v1/me", "hcs_wrong")) for i in range(12)
        ]
        for t in senders:
            t.start()
        time.sleep(0.3)  # every request thread is waiting on the stalled database now
        senders.append(threading.Thread(target=send, args=("healthz", "/healthz", None)))
        senders[-1].start()
        for t in senders:
            t.join(45)
        health = answers.pop("healthz")
        assert health[0] == 503 and health[1] < 3, health
        assert len(answers) == 12
        assert all(status == 503 and retry for status, _, retry in answers.values()), answers
        assert max(took for _, took, _ in answers.values()) < 5, sorted(answers.values(), key=lambda a: a[1])
        proxy.resume()
        _back_within(base, 15)
        assert (
            _get(base + "/api/v1/me", token="hcs_wrong")[0] == 401
        )  # the breaker closed: the database is read again
    finally:
        server.terminate()
        server.wait(10)


def _server_env(proxy, *, unset: tuple[str, ...] = ("ANNOTATOR_WEB_PROCESS",), **settings: str) -> dict:
    """The environment of a web server that reaches the test database through ``proxy``: ``settings`` on
    top, ``unset`` taken out so their defaults apply."""
    name = connection.settings_dict["NAME"]
    env = {
        **os.environ,
        "SECRET_KEY": "stall-test",
        "HTTPS_ONLY": "0",
        "ALLOWED_HOSTS": "127.0.0.1",
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:{proxy.port}/{name}",
        "DEBUG": "0",
        **settings,
    }
    for key in unset:
        env.pop(key, None)
    return env


def _back_within(base: str, seconds: float) -> None:
    """Wait until /healthz answers 200 again after a stall, at most ``seconds``."""
    deadline = time.monotonic() + seconds
    while _get(base + "/healthz")[0] != 200:
        assert time.monotonic() < deadline, "the app did not come back after the stall"
        time.sleep(0.2)


def _free(port: int) -> bool:
    import socket

    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def _get(url: str, token: str | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _wait_for(url: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except urllib.error.HTTPError:
            return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"{url} did not come up")
