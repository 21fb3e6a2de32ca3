"""`make demo` serves everything a new user clicks, the background worker included, from one
command; a worker that dies is started again; Ctrl-C (SIGINT to the terminal's process group) stops both.
The printed "try it as a worker" link is a new worker each time it is opened, and the printed stream
page opens, after signing in, on the demo stream's two alerts. And the README's shell
commands run on a developer's machine without DEBUG=1 or a SECRET_KEY, while serving still needs one."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from http.cookiejar import CookieJar
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from tests.stall_proxy import PORTS

ROOT = Path(__file__).resolve().parents[1]


def _clean_env(**extra: str) -> dict:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"SECRET_KEY", "DEBUG", "DATABASE_URL", "DJANGO_SETTINGS_MODULE", "ANNOTATOR_WEB_PROCESS"}
    }
    return {**env, **extra}


def _free_port() -> int:
    import socket

    for port in PORTS:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) != 0:
                return port
    raise RuntimeError("no free port")


def _group(pgid: int) -> list[str]:
    out = subprocess.run(
        ["ps", "-o", "args=", "-g", str(pgid)], capture_output=True, text=True, check=False
    ).stdout
    return [line for line in out.splitlines() if line.strip() and "<defunct>" not in line]


def _worker_pids(pgid: int) -> list[int]:
    out = subprocess.run(
        ["ps", "-o", "pid=,args=", "-g", str(pgid)], capture_output=True, text=True, check=False
    ).stdout
    return [
        int(line.split()[0])
        for line in out.splitlines()
        if "manage.py db_worker" in line and "bash" not in line
    ]


class _NotedRedirects(urllib.request.HTTPRedirectHandler):
    """Follows redirects as a browser does, keeping each address it was sent to."""

    def __init__(self):
        self.seen = []

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        self.seen.append(newurl)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def open_as_new_worker_twice(output, port: int) -> list[str]:
    """Read the printed "try it as a worker" link from the demo's output and open it in two fresh
    browsers (private windows): both reach the study's consent page, as two different workers.
    Returns the lines printed up to it."""
    seen = []
    for _ in range(200):
        line = output.readline()
        seen.append(line)
        if line.strip().startswith("try it as a worker"):
            link = output.readline().strip()
            break
    else:
        raise AssertionError("no try-it link printed:\n" + "".join(seen))
    assert link.startswith(f"http://127.0.0.1:{port}/"), link
    workers = set()
    for _window in range(2):
        noted = _NotedRedirects()
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()), noted)
        with browser.open(link, timeout=30) as page:  # a 403 here raises HTTPError
            assert page.status == 200 and re.search(r"/annotate/\d+/consent/$", page.url), page.url
        entry = next(url for url in noted.seen if "PROLIFIC_PID=" in url)
        workers.add(parse_qs(urlsplit(entry).query)["PROLIFIC_PID"][0])
    assert len(workers) == 2 and all(re.fullmatch(r"[0-9a-f]{24}", pid) for pid in workers), workers
    return seen


def open_stream_page_as_researcher(printed: list[str], port: int) -> None:
    """Open the printed stream page link as a browser does: sent to sign in, signed in as the demo's
    researcher, back on the page, which shows the demo stream's two alerts."""
    at = next((n for n, line in enumerate(printed) if line.startswith("Stream page of")), None)
    assert at is not None, "no stream page link printed:\n" + "".join(printed)
    assert "product_change since" in printed[at] and "judge_drift since" in printed[at], printed[at]
    link = printed[at + 1].strip()
    assert link.startswith(f"http://127.0.0.1:{port}/streams/"), link
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))
    with browser.open(link, timeout=30) as page:
        assert "/login/" in page.url, page.url
        form = page.read().decode()
        sign_in = page.url
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form).group(1)
    data = urlencode(
        {"csrfmiddlewaretoken": token, "username": "researcher", "password": "researcher-demo-pass"}
    ).encode()
    with browser.open(
        urllib.request.Request(sign_in, data=data, headers={"Referer": sign_in}), timeout=60
    ) as page:
        assert page.status == 200 and page.url == link, page.url
        body = page.read().decode()
    assert "product_change" in body and "judge_drift" in body


@pytest.mark.slow
def test_make_demo_runs_the_worker_and_ctrl_c_stops_both(tmp_path):
    port = _free_port()
    env = _clean_env(DATABASE_URL=f"sqlite:///{tmp_path / 'demo.sqlite3'}")
    demo = subprocess.Popen(
        ["make", "demo", f"PORT={port}"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # noqa: PLW1509 - as a terminal starts it (a background shell ignores SIGINT)
    try:
        deadline = time.monotonic() + 180
        while True:
            assert demo.poll() is None, demo.stdout.read()
            try:
                if urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2).status == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "make demo did not start serving"
            time.sleep(1)
        printed = open_as_new_worker_twice(demo.stdout, port)
        open_stream_page_as_researcher(printed, port)
        running = _group(demo.pid)
        assert any("manage.py db_worker" in line for line in running), running
        assert any("manage.py runserver" in line for line in running), running
        # A worker that dies (killed, out of memory) is started again.
        first = _worker_pids(demo.pid)
        assert len(first) == 1, running
        os.kill(first[0], signal.SIGKILL)
        deadline = time.monotonic() + 30
        while not (again := _worker_pids(demo.pid)) or again == first:
            assert time.monotonic() < deadline, _group(demo.pid)
            time.sleep(0.5)
        os.killpg(demo.pid, signal.SIGINT)  # Ctrl-C
        demo.wait(30)
        time.sleep(1)
        assert _group(demo.pid) == []
    finally:
        if demo.poll() is None or _group(demo.pid):
            os.killpg(demo.pid, signal.SIGKILL)
            demo.wait(10)


@pytest.mark.parametrize(
    "command", [["study_link", "--help"], ["api_token", "--help"], ["db_worker", "--help"]]
)
def test_the_readmes_commands_run_without_debug_or_a_secret_key(command, tmp_path):
    env = _clean_env(DATABASE_URL=f"sqlite:///{tmp_path / 'x.sqlite3'}")
    result = subprocess.run(
        [sys.executable, "manage.py", *command],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "usage:" in result.stdout


def test_a_command_that_writes_runs_without_them(tmp_path):
    env = _clean_env(DATABASE_URL=f"sqlite:///{tmp_path / 'x.sqlite3'}")
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
    subprocess.run(
        [sys.executable, "manage.py", "create_demo_users"], cwd=ROOT, env=env, check=True, capture_output=True
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "api_token", "researcher", "--days", "2"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("hcs_")


@pytest.mark.parametrize(
    "serve",
    [
        [sys.executable, "manage.py", "runserver", "127.0.0.1:1", "--noreload"],
        [sys.executable, "-c", "import annotator.wsgi"],
    ],
)
def test_serving_still_refuses_to_start_without_a_secret_key(serve):
    result = subprocess.run(
        serve, cwd=ROOT, env=_clean_env(), capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode != 0 and "SECRET_KEY is not set" in result.stderr
