"""gunicorn's own refusals (a request line or headers over its limits) are problem details under /api/,
as every other API error is; elsewhere they stay gunicorn's page."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from annotator.gunicorn_workers import api_problem
from tests.stall_proxy import PORTS

ROOT = Path(__file__).resolve().parents[3]


def _raw(port: int, request: bytes) -> tuple[int, dict[str, str], bytes]:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(request)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, body


@pytest.fixture(scope="module", params=["SyncWorker", "ThreadWorker"])
def server(request, tmp_path_factory):
    port = next(p for p in reversed(PORTS) if socket.socket().connect_ex(("127.0.0.1", p)) != 0)
    env = {
        **os.environ,
        "SECRET_KEY": "gunicorn-test",
        "HTTPS_ONLY": "0",
        "ALLOWED_HOSTS": "127.0.0.1",
        "DATABASE_URL": f"sqlite:///{tmp_path_factory.mktemp('db') / 'x.sqlite3'}",
    }
    threads = ["--threads", "2"] if request.param == "ThreadWorker" else []
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "annotator.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "1",
            *threads,
            "--worker-class",
            f"annotator.gunicorn_workers.{request.param}",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    while socket.socket().connect_ex(("127.0.0.1", port)) != 0:
        assert process.poll() is None and time.monotonic() < deadline, process.stderr.read()
        time.sleep(0.2)
    yield port
    process.terminate()
    process.wait(10)


def test_a_request_line_too_long_for_the_api_is_a_problem(server):
    status, headers, body = _raw(
        server, b"GET /api/v1/batches?cursor=" + b"A" * 6000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"
    )
    assert status == 414 and headers["Content-Type"] == "application/problem+json"
    problem = json.loads(body)
    assert problem["status"] == 414 and problem["instance"].startswith("/api/v1/batches?cursor=AAA")
    assert "POST" in problem["detail"] and {"type", "title", "detail"} <= set(problem)


def test_headers_too_large_for_the_api_are_a_problem(server):
    request = b"GET /api/v1/me HTTP/1.1\r\nHost: x\r\nCookie: " + b"c" * 9000 + b"\r\n\r\n"
    status, headers, body = _raw(server, request)
    assert status == 431 and headers["Content-Type"] == "application/problem+json"
    assert json.loads(body)["instance"] == "/api/v1/me"


def test_other_paths_keep_gunicorns_page(server):
    status, headers, _ = _raw(server, b"GET /reports/?x=" + b"A" * 6000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status == 414 and headers["Content-Type"] == "text/html"


def test_only_limit_refusals_of_api_paths_are_rewritten():
    from gunicorn.http.errors import InvalidRequestLine, LimitRequestLine

    refused = LimitRequestLine(5000, 4094)
    refused.request_head = b"GET /apiary HTTP/1.1"
    assert api_problem(refused) is None
    other = InvalidRequestLine("x")
    other.request_head = b"GET /api/v1/me HTTP/1.1"
    assert api_problem(other) is None
