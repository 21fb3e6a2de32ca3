"""deploy/nginx/annotator.conf, run by Debian's nginx in front of stand-in app servers: a request that
no app server finishes (a gunicorn worker killed during a submit) gets the "not saved — send again"
page, with the #error-message the rating page's htmx shows, instead of nginx's bare 502; the app's own
503 passes through unchanged."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.stall_proxy import PORTS

ROOT = Path(__file__).resolve().parent.parent
CONF = ROOT / "deploy" / "nginx" / "annotator.conf"
NGINX = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if Path(p).exists()), None)
pytestmark = pytest.mark.skipif(
    NGINX is None, reason="nginx is not installed on this machine (Debian: apt-get install nginx-light)"
)
FORM = b"csrfmiddlewaretoken=x&score_coherence=4"


class StandIn:
    """An app server that reads each request and then either closes the connection without a word (as
    a gunicorn worker does when it is killed mid-request) or answers the app's own 503."""

    def __init__(self, mode: str):
        self.mode = mode
        self.listener = socket.create_server(("127.0.0.1", _free_port()))
        self.port = self.listener.getsockname()[1]
        self.seen: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            with client:
                client.settimeout(5)
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = client.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                self.seen.append(data)
                if self.mode == "app-503":
                    body = (
                        b'<div id="error-message"><h1>The database is not answering for a moment</h1></div>'
                    )
                    client.sendall(
                        b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 5\r\nContent-Type: text/html\r\n"
                        + f"Content-Length: {len(body)}\r\n\r\n".encode()
                        + body
                    )
                # "killed": the connection closes with no answer at all

    def close(self) -> None:
        self.listener.close()


def _free_port() -> int:
    for port in PORTS:
        with socket.socket() as s:
            s.setsockopt(
                socket.SOL_SOCKET, socket.SO_REUSEADDR, 1
            )  # as nginx binds: closed connections do not count
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    pytest.fail(f"no free port in {PORTS.start}-{PORTS.stop - 1} (TEST_PORTS)")


@pytest.fixture
def nginx(tmp_path):
    """The shipped config with only its placeholders set (the app server, the port, this checkout's
    path), inside a minimal nginx.conf; yields a function starting it in front of a stand-in."""
    started: list[subprocess.Popen] = []
    stand_ins: list[StandIn] = []

    def start(mode: str) -> str:
        app = StandIn(mode)
        stand_ins.append(app)
        port = _free_port()
        site = CONF.read_text()
        site = re.sub(r"server 127\.0\.0\.1:8000;", f"server 127.0.0.1:{app.port};", site)
        site = site.replace("listen 80;", f"listen 127.0.0.1:{port};")
        site = site.replace("/srv/annotator/", f"{ROOT}/")
        site = site.replace("/var/log/nginx/", f"{tmp_path}/")
        temp = "\n".join(
            f"{kind}_temp_path {tmp_path}/{kind};"
            for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
        )
        (tmp_path / "nginx.conf").write_text(
            f"daemon off;\nmaster_process off;\npid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/error.log;\n"
            f"events {{}}\nhttp {{\naccess_log off;\n{temp}\ntypes {{ text/html html; }}\n"
            f"default_type application/octet-stream;\n{site}\n}}\n"
        )
        check = subprocess.run(
            [NGINX, "-t", "-c", str(tmp_path / "nginx.conf")], capture_output=True, text=True
        )
        assert check.returncode == 0, check.stderr
        process = subprocess.Popen([NGINX, "-c", str(tmp_path / "nginx.conf")], stderr=subprocess.PIPE)
        started.append(process)
        deadline = time.monotonic() + 10
        while not _listening(port):
            assert process.poll() is None, process.stderr.read().decode()
            assert time.monotonic() < deadline, "nginx did not start"
            time.sleep(0.05)
        return f"http://127.0.0.1:{port}"

    start.stand_ins = stand_ins  # what each stand-in was sent
    yield start
    for process in started:
        process.terminate()
        process.wait(10)
    for app in stand_ins:
        app.close()


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _send(url: str, data: bytes | None = None, headers: dict | None = None):
    request = urllib.request.Request(url, data=data, headers=headers or {}, method="POST" if data else "GET")
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read().decode()


@pytest.mark.parametrize("htmx", [False, True], ids=["form", "htmx"])
def test_a_submit_whose_worker_is_killed_says_not_saved_send_again(nginx, htmx):
    base = nginx("killed")
    headers = {
        "Content-Type": "application/x-www-form-urlencoded",
        **({"HX-Request": "true"} if htmx else {}),
    }
    status, got_headers, body = _send(base + "/annotate/item/7/submit/", FORM, headers)
    assert status == 502
    assert "Bad Gateway</h1>" not in body and "<center>nginx" not in body  # not nginx's own page
    assert got_headers["Retry-After"] == "5" and got_headers["Content-Type"].startswith("text/html")
    # What request_errors.js shows in place of a failed htmx request: #error-message's heading and text.
    message = re.search(r'<div id="error-message">(.*?)</div>', body, re.S).group(1)
    assert "<h1>Not saved — send again</h1>" in message
    assert "what you entered is still in the form" in message


def test_an_api_request_whose_worker_is_killed_gets_problem_details(nginx):
    base = nginx("killed")
    status, headers, body = _send(base + "/api/v1/batches", b"{}", {"Content-Type": "application/json"})
    assert status == 502 and headers["Content-Type"] == "application/problem+json"
    problem = json.loads(body)
    assert (
        problem["status"] == 502
        and problem["title"] == "Bad Gateway"
        and problem["detail"].startswith("Not saved")
    )


def test_the_apps_own_503_passes_through_unchanged(nginx):
    base = nginx("app-503")
    status, headers, body = _send(base + "/annotate/item/7/submit/", FORM)
    assert status == 503 and headers["Retry-After"] == "5"
    assert "The database is not answering for a moment" in body and "Not saved" not in body


def test_every_error_page_the_config_names_exists():
    names = re.findall(r"error_page [\d ]+ /_errors/([\w.-]+);", CONF.read_text())
    assert len(names) == 4
    for name in names:
        assert (ROOT / "deploy" / "nginx" / "errors" / name).is_file(), name
        if name.endswith(".json"):
            assert json.loads((ROOT / "deploy" / "nginx" / "errors" / name).read_text())["status"] == int(
                name[-8:-5]
            )


def test_the_access_log_keeps_the_platform_ids_out(nginx, tmp_path):
    """A study link's query carries PROLIFIC_PID and SESSION_ID: the shipped log format writes the path
    alone, and no Referer."""
    base = nginx("app-503")
    link = "/study/abc/?PROLIFIC_PID=5f0c0ffee0c0ffee0c0ffee0&STUDY_ID=s1&SESSION_ID=sess-secret-1"
    _send(base + link, headers={"Referer": base + link})
    # nginx writes the line when it finalises the request, which can be just after the client has its
    # answer: wait for it rather than read a file that is still empty.
    path, deadline, log = tmp_path / "annotator.access.log", time.monotonic() + 10, ""
    while "/study/abc/" not in log and time.monotonic() < deadline:
        log = path.read_text() if path.exists() else ""
        time.sleep(0.05)
    assert "/study/abc/" in log
    assert "5f0c0ffee0c0ffee0c0ffee0" not in log and "sess-secret-1" not in log and "PROLIFIC_PID" not in log


def test_the_app_server_gets_when_nginx_read_the_request_not_what_the_client_said(nginx):
    """X-Request-Start is nginx's own clock (the app's queue deadline reads it, docs/faults.md): a
    stamp the client sent, old or in the future, is replaced."""
    app_base = nginx("app-503")
    app = nginx.stand_ins[-1]
    for fake in ("t=1", "t=99999999999.000"):
        before = time.time()
        _send(app_base + "/annotate/1/next/", headers={"X-Request-Start": fake})
        after = time.time()
        request = app.seen[-1].decode("latin-1")
        stamps = re.findall(r"(?im)^X-Request-Start: *t=([\d.]+)\r$", request)
        assert len(stamps) == 1, request
        assert before - 0.01 <= float(stamps[0]) <= after + 0.01
