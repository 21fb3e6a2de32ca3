"""make web's worker answers /healthz on threads of its own: a load balancer's probe is not queued
behind requests that hold every request thread (as requests waiting on a stalled database do)."""

from __future__ import annotations

import http.client
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from annotator.gunicorn_workers import asks_for_health
from tests.stall_proxy import PORTS

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("head", "health"),
    [
        (b"GET /healthz HTTP/1.1\r\n", True),
        (b"HEAD /healthz HTTP/1.1\r\n", True),
        (b"GET /healthz?x=1 HTTP/1.1\r\n", True),
        (b"GET /healthzz HTTP/1.1\r\n", False),
        (b"POST /healthz HTTP/1.1\r\n", False),
        (b"GET /annotate/1/next/ HTTP/1.1\r\n", False),
        (b"", False),
    ],
)
def test_a_health_request_is_told_by_its_first_bytes_without_reading_them(head, health):
    ours, theirs = socket.socketpair()
    try:
        if head:
            theirs.sendall(head)
        assert asks_for_health(ours) is health
        if head:
            assert ours.recv(100) == head  # peeked, not taken: gunicorn still reads the whole request
    finally:
        ours.close()
        theirs.close()


def _get(port: int, path: str, out: dict) -> None:
    started = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path)
        out[path] = (conn.getresponse().status, time.monotonic() - started)
    finally:
        conn.close()


def test_healthz_is_answered_while_every_request_thread_is_busy():
    port = next(p for p in reversed(PORTS) if socket.socket().connect_ex(("127.0.0.1", p)) != 0)
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "tests.slow_wsgi:app",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "1",
        ]
        + ["--worker-class", "annotator.gunicorn_workers.ThreadWorker", "--threads", "1"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while socket.socket().connect_ex(("127.0.0.1", port)) != 0:
            assert time.monotonic() < deadline and server.poll() is None, "gunicorn did not start"
            time.sleep(0.05)
        answers: dict = {}
        slow = [threading.Thread(target=_get, args=(port, f"/slow?s=2&n={n}", answers)) for n in range(3)]
        for t in slow:
            t.start()
        time.sleep(0.3)  # the one request thread is held, two more requests wait for it
        _get(port, "/healthz", answers)
        assert answers["/healthz"][0] == 200 and answers["/healthz"][1] < 1, answers  # not after 6 s of queue
        for t in slow:
            t.join(20)
        assert sorted(status for status, _ in answers.values()) == [200] * 4
    finally:
        server.terminate()
        server.wait(10)
