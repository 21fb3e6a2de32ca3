"""Launch bench: a crowd study's first minute on PostgreSQL, behind a proxy, on two app servers.

First the admin's part, over HTTP: the batch file (items, a training row, two checks) is previewed
on one app server and confirmed on the other, so the file waits in the storage they share; consent,
instructions and the Prolific link are made on the Studies page. Then N workers (default 200)
arrive within S seconds (default 60) at the study link and do what a worker does: open the link,
consent, read the instructions, do the training item, rate a few items (the link's quota) with
pauses in between, reach the completion page. Between them and the app stands a round-robin HTTP
proxy written here (it adds ``X-Forwarded-For`` the way nginx's ``$proxy_add_x_forwarded_for``
does; each worker connects from its own loopback address, 127.0.x.y, so the proxy sees 200
clients) in front of TWO gunicorn servers (2 workers each) that share the database and the uploads
folder, as README's "Several app servers" section describes. The servers reach PostgreSQL through
a TCP proxy run here too, so the database cut (default 5 s, in the middle of the arrivals) cuts
that proxy: every connection is dropped and new ones are refused, and the real cluster other
people use keeps running.

Printed, never asserted: p50/p95 per request kind outside and inside the cut, the same over time,
statuses (429s from the link limit included), and what held afterwards (acknowledged vs stored
ratings, duplicates, items over k). Target: p95 <= 300 ms outside the cut.

    .venv/bin/python bench/launch_bench.py                                  # 200 workers, 60 s, a 5 s cut
    .venv/bin/python bench/launch_bench.py --workers 20 --arrive 10 --no-cut
    DB_PREPARED_STATEMENTS=0 .venv/bin/python bench/launch_bench.py         # the servers without prepared statements
    .venv/bin/python bench/launch_bench.py --link-opens-per-minute 1000     # the link limit out of the way

PostgreSQL: 127.0.0.1:5432 as postgres (trust); database ``launch_bench`` (dropped and re-created,
dropped again at the end unless --keep). Loopback only; ports 8140-8143 by default (--port).
"""

from __future__ import annotations

import argparse
import functools
import http.client
import json
import multiprocessing
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import urlencode, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))

from annotator_http import (  # noqa: E402 (bench/ is not a package)
    ACTION,
    CSRF,
    ROOT,
    SCORES,
    VENV_BIN,
    django_setup,
    process_cpu_seconds,
    recreate_postgres,
    server_env,
    start_gunicorn,
)
from load_faults_report import percentile  # noqa: E402

COMPLETION = "LAUNCH1"
CODE = re.compile(r'id="completion-code">([^<]*)<')
SAVED, ALREADY = "Saved your rating.", "You had already submitted this item"


# --------------------------------------------------------------------------- proxies
class Pipe:
    """Copy bytes both ways between two sockets until either side closes."""

    def __init__(self, a: socket.socket, b: socket.socket, on_close=None):
        self.a, self.b, self.on_close = a, b, on_close
        self.closed = False

    def start(self, first_to_b: bytes = b"") -> None:
        if first_to_b:
            self.b.sendall(first_to_b)
        for src, dst in ((self.a, self.b), (self.b, self.a)):
            threading.Thread(target=self._copy, args=(src, dst), daemon=True).start()

    def _copy(self, src, dst) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        self.close()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for s in (self.a, self.b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
        if self.on_close:
            self.on_close(self)


class Listener:
    def __init__(self, port: int):
        self.server = socket.create_server(("127.0.0.1", port), backlog=512)
        self.port = port
        self.stopped = False
        threading.Thread(target=self._accept_loop, daemon=True).start()

    def _accept_loop(self) -> None:
        while not self.stopped:
            try:
                conn, peer = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self.handle, args=(conn, peer), daemon=True).start()

    def handle(self, conn: socket.socket, peer) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        self.stopped = True
        self.server.close()


class DatabaseProxy(Listener):
    """TCP proxy in front of PostgreSQL that can be cut: open connections dropped, new ones refused.
    ``cut_event`` set = cut."""

    def __init__(self, port: int, target: tuple[str, int], cut_event):
        self.target, self.cut_now = target, False
        self.pipes: set[Pipe] = set()
        self.lock = threading.Lock()
        super().__init__(port)
        threading.Thread(target=self._watch, args=(cut_event,), daemon=True).start()

    def _watch(self, cut_event) -> None:
        while True:
            cut_event.wait()
            self.cut()
            while cut_event.is_set():
                time.sleep(0.01)
            self.restore()

    def handle(self, conn, peer) -> None:
        if self.cut_now:
            conn.close()
            return
        try:
            upstream = socket.create_connection(self.target, timeout=5)
            upstream.settimeout(None)
        except OSError:
            conn.close()
            return
        pipe = Pipe(conn, upstream, on_close=self._forget)
        with self.lock:
            self.pipes.add(pipe)
        pipe.start()

    def _forget(self, pipe: Pipe) -> None:
        with self.lock:
            self.pipes.discard(pipe)

    def cut(self) -> None:
        self.cut_now = True
        with self.lock:
            pipes = list(self.pipes)
        for pipe in pipes:
            pipe.close()

    def restore(self) -> None:
        self.cut_now = False


class RoundRobinProxy(Listener):
    """HTTP proxy sending each connection to the next backend, with ``X-Forwarded-For`` appended
    (the client's own header, if any, then its address), as nginx's ``$proxy_add_x_forwarded_for``."""

    def __init__(self, port: int, backends: list[int], sent):
        self.backends, self.turn = backends, 0
        self.lock = threading.Lock()
        self.sent = sent  # requests per backend, shared with the parent process
        super().__init__(port)

    def handle(self, conn, peer) -> None:
        data = b""
        try:
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    conn.close()
                    return
                data += chunk
        except OSError:
            conn.close()
            return
        head, rest = data.split(b"\r\n\r\n", 1)
        lines = head.split(b"\r\n")
        forwarded = peer[0].encode()
        kept = [lines[0]]
        for line in lines[1:]:
            if line.lower().startswith(b"x-forwarded-for:"):
                forwarded = line.split(b":", 1)[1].strip() + b", " + forwarded
            else:
                kept.append(line)
        kept.append(b"X-Forwarded-For: " + forwarded)
        with self.lock:
            index = self.turn % len(self.backends)
            self.turn += 1
            self.sent[index] += 1
        backend = self.backends[index]
        try:
            upstream = socket.create_connection(("127.0.0.1", backend), timeout=5)
            upstream.settimeout(None)
        except OSError:
            conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            conn.close()
            return
        Pipe(conn, upstream).start(b"\r\n".join(kept) + b"\r\n\r\n" + rest)


def serve_forever(make) -> None:
    """(child process) Run a proxy until terminated: each proxy has a process of its own, so the
    200 client threads and the proxies' byte copying do not share one interpreter lock."""
    make()
    threading.Event().wait()


def start_proxy(make) -> multiprocessing.Process:
    process = multiprocessing.get_context("fork").Process(target=serve_forever, args=(make,), daemon=True)
    process.start()
    return process


def wait_for_port(port: int) -> None:
    for _ in range(200):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


# --------------------------------------------------------------------------- the study
ADMIN, ADMIN_PASSWORD = "launch-admin", "launch-admin-password-not-secret-42"
STUDY_TOKEN = re.compile(r"/study/([A-Za-z0-9_-]+)/\?")
SETTINGS_ACTION = re.compile(r'action="/studies/(\d+)/settings/"')
UPLOAD_TOKEN = re.compile(r'name="token" value="([^"]+)"')


def seed() -> None:
    """(child process) The admin's account."""
    django_setup()
    from django.contrib.auth import get_user_model

    get_user_model().objects.create_user(ADMIN, password=ADMIN_PASSWORD, is_staff=True)


def quality_rule(batch: int) -> None:
    """(child process) A check every fifth item (the Django admin's QualityRule form; the file's
    training row already set the training), then the planner statistics autovacuum would gather."""
    django_setup()
    from django.db import connection

    from annotator.models import QualityRule

    QualityRule.objects.update_or_create(batch_id=batch, defaults={"check_every": 5})
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def batch_file(items: int) -> bytes:
    """JSONL: the items, one training row and two checks whose expert scores are the workers' SCORES."""
    constraints = ["avoid tolls", "arrive before 8AM"]
    rows = [
        {
            "item_id": f"launch-{i}",
            "prompt_id": f"p{i // 2}",
            "system_id": f"s{i % 2}",
            "prompt": f"Plan a route to terminal {i} avoiding tolls; arrive before 8AM.",
            "response": "Take the ring road west (no tolls), leave by 6:40.\n" * 8,
            "constraints": constraints,
        }
        for i in range(items)
    ]
    expert = {f"gold_{k.removeprefix('score_')}": int(v) for k, v in SCORES.items() if k.startswith("score_")}
    for n, kind in enumerate(("training", "check", "check")):
        rows.append(
            {
                "item_id": f"launch-route-{n}",
                "prompt": "Plan a route avoiding tolls; arrive before 8AM.",
                "response": "Take the ring road west.",
                "constraints": constraints,
                **expert,
                "gold_kind": kind,
                "gold_explanation": "The ring road has no tolls.",
            }
        )
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


def multipart(fields: dict[str, str], files: dict[str, tuple[str, bytes]]) -> tuple[str, bytes]:
    boundary = "launchbench" + os.urandom(8).hex()
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode()
        for k, v in fields.items()
    ]
    for key, (filename, data) in files.items():
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{key}"; filename="{filename}"\r\n'
            f"Content-Type: application/octet-stream\r\n\r\n".encode()
            + data
            + b"\r\n"
        )
    return f"multipart/form-data; boundary={boundary}", b"".join(parts) + f"--{boundary}--\r\n".encode()


def prepare_study(app_ports: list[int], args, env: dict[str, str]) -> tuple[dict, list[list]]:
    """The admin's part, over HTTP: log in, upload the batch with the preview on one app server and
    the confirm on the other (the file waits in the shared uploads storage), set consent and
    instructions and make the Prolific link on the Studies page. Returns the study and what each
    step answered."""
    shared = Shared()
    admin = Worker(9990, app_ports[0], shared, time.monotonic() + 120, label="admin")
    steps = []

    def step(label: str, port: int, method: str, path: str, body=None) -> str:
        admin.port = port
        started = time.monotonic()
        status, page, final = admin.go(method, path, body)
        steps.append([label, f":{port}", status, f"{(time.monotonic() - started) * 1000:.0f}"])
        if status is None or status >= 400:
            raise RuntimeError(f"{label}: {status} {page[:500]}")
        return page

    csrf = CSRF.search(step("login page", app_ports[0], "GET", "/login/")).group(1)
    step(
        "log in",
        app_ports[0],
        "POST",
        "/login/",
        {"username": ADMIN, "password": ADMIN_PASSWORD, "csrfmiddlewaretoken": csrf},
    )
    csrf = CSRF.search(step("upload page", app_ports[0], "GET", "/uploads/")).group(1)
    form = multipart(
        {"mode": "batch", "name": "launch", "k": "3", "csrfmiddlewaretoken": csrf},
        {"file": ("launch.jsonl", batch_file(args.items))},
    )
    page = step("upload preview", app_ports[0], "POST", "/uploads/preview/", form)
    token = UPLOAD_TOKEN.search(page).group(1)
    page = step(
        "upload confirm",
        app_ports[1],
        "POST",
        "/uploads/confirm/",
        {"token": token, "csrfmiddlewaretoken": CSRF.search(page).group(1)},
    )
    if "no longer waiting" in page:
        raise RuntimeError("the confirm on the second server did not find the file the first one kept")
    page = step("studies page", app_ports[1], "GET", "/studies/")
    batch, csrf = int(SETTINGS_ACTION.search(page).group(1)), CSRF.search(page).group(1)
    step(
        "study settings",
        app_ports[1],
        "POST",
        f"/studies/{batch}/settings/",
        {
            "consent_text": "## Consent\n\nYou agree that we keep your ratings.",
            "instructions": "Read each response in full before you score.",
            "max_items_per_annotator": "",
            "max_session_minutes": "",
            "csrfmiddlewaretoken": csrf,
        },
    )
    page = step(
        "study link",
        app_ports[1],
        "POST",
        "/studies/study-link/",
        {
            "batch": str(batch),
            "platform": "prolific",
            "quota": str(args.quota),
            "max_minutes": "60",
            "completion_code": COMPLETION,
            "screen_out_code": "LAUNCHSCR",
            "days": "30",
            "csrfmiddlewaretoken": csrf,
        },
    )
    subprocess.run(
        [str(VENV_BIN / "python"), __file__, "--quality-rule", str(batch)], cwd=ROOT, env=env, check=True
    )
    return {"batch": batch, "token": STUDY_TOKEN.search(page).group(1), "k": 3}, steps


# --------------------------------------------------------------------------- workers
@dataclass
class Record:
    kind: str
    start: float
    end: float
    status: int | None  # None: connection error or timeout
    worker: int


@dataclass
class Shared:
    lock: threading.Lock = field(default_factory=threading.Lock)
    records: list[Record] = field(default_factory=list)
    acked: set[tuple[str, int]] = field(default_factory=set)  # (worker id, item pk) the page said was saved
    throttled: set[int] = field(default_factory=set)
    codes: set[int] = field(default_factory=set)  # workers shown the completion code
    stuck: Counter = field(default_factory=Counter)  # how a worker's visit ended otherwise


def kind_of(method: str, path: str) -> str:
    if path.startswith("/study/"):
        return "open link"
    for part, name in (
        ("/consent/", "consent"),
        ("/instructions/", "instructions"),
        ("/next/", "next item"),
        ("/done/", "done page"),
        ("/answer/", "gold submit"),
        ("/item/", "submit"),
    ):
        if part in path:
            return f"{name} {method}" if name in ("consent", "instructions") else name
    return f"other {method}"


class Worker:
    """One worker's browser: its own loopback address, a cookie jar, one connection per request;
    after a connection error or a 5xx it waits a second and sends the same request again."""

    def __init__(self, n: int, port: int, shared: Shared, deadline: float, label: str = "launch"):
        self.n, self.port, self.shared, self.deadline = n, port, shared, deadline
        self.pid = f"{n:06d}{label}".ljust(24, "0")
        self.address = f"127.0.{1 + n // 250}.{2 + n % 250}"
        self.cookies: dict[str, str] = {}

    def _once(self, method: str, path: str, body):
        conn = http.client.HTTPConnection(
            "127.0.0.1", self.port, timeout=30, source_address=(self.address, 0)
        )
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
        data = None
        if isinstance(body, tuple):  # (content type, bytes): a multipart form
            headers["Content-Type"], data = body
        elif body is not None:
            data = urlencode(body)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        start = time.monotonic()
        try:
            conn.request(method, path, body=data, headers=headers)
            response = conn.getresponse()
            text = response.read().decode("utf-8", "replace")
            status = response.status
        except OSError:
            response, text, status = None, "", None
        finally:
            conn.close()
        with self.shared.lock:
            self.shared.records.append(Record(kind_of(method, path), start, time.monotonic(), status, self.n))
        if response is not None:
            for header in response.headers.get_all("Set-Cookie") or []:
                for key, morsel in SimpleCookie(header).items():
                    self.cookies[key] = morsel.value
        return status, text, response

    def go(self, method: str, path: str, body=None) -> tuple[int | None, str, str]:
        """Send, retry as a person would, follow redirects; returns (status, page, final path)."""
        while True:
            status, text, response = self._once(method, path, body)
            if status is not None and status < 500:
                break
            if time.monotonic() > self.deadline:
                return status, text, path
            time.sleep(1.0)
        for _ in range(10):
            if status not in (301, 302, 303):
                break
            path = urlsplit(response.headers["Location"]).path
            method, body = "GET", None
            while True:
                status, text, response = self._once("GET", path, None)
                if (status is not None and status < 500) or time.monotonic() > self.deadline:
                    break
                time.sleep(1.0)
        return status, text, path

    def visit(self, token: str, batch: int, think: float) -> None:
        rng = random.Random(self.n)
        query = urlencode({"PROLIFIC_PID": self.pid, "STUDY_ID": "launch", "SESSION_ID": f"s{self.n}"})
        status, page, path = self.go("GET", f"/study/{token}/?{query}")
        if status == 429:
            with self.shared.lock:
                self.shared.throttled.add(self.n)
            return
        for _step in range(60):
            time.sleep(think * rng.uniform(0.5, 1.5))
            token_match = CSRF.search(page)
            csrf = token_match.group(1) if token_match else ""
            if CODE.search(page):
                if COMPLETION in page:
                    with self.shared.lock:
                        self.shared.codes.add(self.n)
                return
            if path.endswith("/consent/"):
                status, page, path = self.go(
                    "POST", path, {"decision": "accept", "csrfmiddlewaretoken": csrf}
                )
            elif path.endswith("/instructions/"):
                status, page, path = self.go("POST", path, {"csrfmiddlewaretoken": csrf})
            elif 'id="continue"' in page:  # training feedback
                status, page, path = self.go("GET", f"/annotate/{batch}/next/")
            elif found := ACTION.search(page):
                url, pk = found.group(1), int(found.group(2))
                status, page, path = self.go("POST", url, {**SCORES, "csrfmiddlewaretoken": csrf})
                if "/item/" in url and (SAVED in page or ALREADY in page):
                    with self.shared.lock:
                        self.shared.acked.add((self.pid, pk))
            else:
                with self.shared.lock:
                    self.shared.stuck[f"{status} at {kind_of('GET', path)}"] += 1
                return


# --------------------------------------------------------------------------- the run
def warm_up(app_ports: list[int], study: dict, gunicorn_workers: int) -> None:
    """A few whole visits on each app server before the launch, straight to it (not through the
    proxy, not measured): a server that has been running has imported its modules and rendered its
    templates once per worker; the link limit's count of 127.0.0.1 starts at a few."""
    shared = Shared()
    for port in app_ports:
        visitors = [
            Worker(9000 + port % 100 * 10 + n, port, shared, time.monotonic() + 60, label="warmup")
            for n in range(2 * gunicorn_workers)
        ]
        threads = [
            threading.Thread(target=v.visit, args=(study["token"], study["batch"], 0.0)) for v in visitors
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()


def verify(pg_url: str, batch: int, k: int, acked: set[tuple[str, int]]) -> dict:
    import psycopg

    with psycopg.connect(pg_url) as conn:
        stored = set(
            conn.execute(
                "SELECT e.worker_id, a.item_id FROM annotator_annotation a "
                "JOIN annotator_enrolment e ON e.user_id = a.annotator_id AND e.batch_id = %s "
                "WHERE e.worker_id LIKE '%%launch%%'",
                [batch],
            ).fetchall()
        )
        duplicates = conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM annotator_annotation GROUP BY item_id, annotator_id "
            "HAVING count(*) > 1) d"
        ).fetchone()[0]
        over_k = conn.execute(
            "SELECT count(*) FROM annotator_item i WHERE i.batch_id = %s AND "
            "(SELECT count(*) FROM annotator_annotation a WHERE a.item_id = i.id) > %s",
            [batch, k],
        ).fetchone()[0]
        enrolled = conn.execute(
            "SELECT count(*) FROM annotator_enrolment WHERE batch_id = %s AND worker_id LIKE '%%launch%%'",
            [batch],
        ).fetchone()[0]
    return {
        "acknowledged": len(acked),
        "stored": len(stored),
        "lost": len(acked - stored),
        "stored_unacknowledged": len(stored - acked),
        "duplicates": duplicates,
        "over_k": over_k,
        "enrolled": enrolled,
    }


def table(title: str, header: list[str], rows: list[list]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=False)]
    lines = [
        f"\n{title}",
        "| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |",
        "|" + "|".join("-" * (w + 2) for w in widths) + "|",
    ]
    lines += [
        "| " + " | ".join(str(x).ljust(w) for x, w in zip(row, widths, strict=True)) + " |" for row in rows
    ]
    return "\n".join(lines)


def timeline(records: list[Record], t0: float, step: float = 5.0) -> str:
    """Per ``step`` seconds, by when requests started: how many, the 503s, p50/p95 of the answered and
    the most requests in flight at once (a queue building up behind the app servers shows there)."""
    rows = []
    last = max((r.start for r in records), default=t0)
    for i in range(int((last - t0) // step) + 1):
        lo, hi = t0 + i * step, t0 + (i + 1) * step
        part = [r for r in records if lo <= r.start < hi]
        answered = [(r.end - r.start) * 1000 for r in part if r.status is not None]
        instants = [lo + step * k / 10 for k in range(10)]
        in_flight = max(sum(1 for r in records if r.start <= t < r.end) for t in instants)
        rows.append(
            [
                f"{lo - t0:.0f}-{hi - t0:.0f}",
                len(part),
                sum(1 for r in part if r.status == 503),
                f"{percentile(answered, 0.5):.0f}",
                f"{percentile(answered, 0.95):.0f}",
                in_flight,
            ]
        )
    return table(
        "over time (s after the first arrival, by request start)",
        ["s", "requests", "503", "p50 ms", "p95 ms", "most in flight"],
        rows,
    )


def report(
    shared: Shared,
    cut: tuple[float, float] | None,
    t0: float,
    args,
    outcome: dict,
    sent: Counter,
    machine: list[list],
) -> str:
    def inside(r: Record) -> bool:
        return cut is not None and r.start < cut[1] and r.end > cut[0]

    by_kind: dict[str, dict[str, list[Record]]] = defaultdict(lambda: {"outside": [], "inside": []})
    for r in shared.records:
        by_kind[r.kind]["inside" if inside(r) else "outside"].append(r)
    rows = []
    for kind in sorted(by_kind):
        row = [kind]
        for part in ("outside", "inside"):
            answered = [(r.end - r.start) * 1000 for r in by_kind[kind][part] if r.status is not None]
            row += [
                len(by_kind[kind][part]),
                f"{percentile(answered, 0.5):.0f}",
                f"{percentile(answered, 0.95):.0f}",
            ]
        rows.append(row)
    everything = [(r.end - r.start) * 1000 for r in shared.records if r.status is not None and not inside(r)]
    rows.append(
        [
            "all",
            len(everything),
            f"{percentile(everything, 0.5):.0f}",
            f"{percentile(everything, 0.95):.0f}",
            "",
            "",
            "",
        ]
    )
    out = [
        f"launch bench: {args.workers} workers arriving within {args.arrive:.0f} s, quota {args.quota}, "
        f"mean pause {args.think:g} s, "
        f"2 app servers x {args.gunicorn_workers} gunicorn workers, DB_PREPARED_STATEMENTS="
        f"{os.environ.get('DB_PREPARED_STATEMENTS', '1')}, LINK_OPENS_PER_MINUTE={args.link_opens_per_minute}, "
        f"PROXY_COUNT=1"
    ]
    if cut is not None:
        out.append(f"database cut from {cut[0] - t0:.1f} s to {cut[1] - t0:.1f} s after the first arrival")
    out.append(
        table(
            "latency (ms; inside = the request overlapped the cut; errors left out of the percentiles)",
            ["request", "n outside", "p50", "p95", "n inside", "p50", "p95"],
            rows,
        )
    )
    statuses = Counter(
        (("inside" if inside(r) else "outside"), r.status or "conn error") for r in shared.records
    )
    out.append(timeline(shared.records, t0))
    out.append(
        table(
            "statuses",
            ["when", "status", "n"],
            [[w, s, n] for (w, s), n in sorted(statuses.items(), key=lambda x: (x[0][0], str(x[0][1])))],
        )
    )
    visits = [
        ["workers", args.workers],
        ["refused at the link (429)", len(shared.throttled)],
        ["shown the completion code", len(shared.codes)],
        *[[f"stopped: {why}", n] for why, n in shared.stuck.items()],
        *[[key.replace("_", " "), value] for key, value in outcome.items()],
        *[[f"requests to app server :{port}", n] for port, n in sorted(sent.items())],
    ]
    out.append(table("what held", ["", "n"], visits))
    out.append(
        table("the machine during the run (CPU seconds; load average at start and end)", ["", ""], machine)
    )
    return "\n".join(out)


def server_log_summary(logs: Path) -> str:
    """The exceptions that ended the servers' logged tracebacks, by type and message (the earlier
    links of a chained traceback, such as Django's session-cache miss, are left out)."""
    raised: Counter[str] = Counter()
    for path in sorted(logs.iterdir()):
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            if not re.match(r"^[\w.]+(Error|Exception|Timeout)\b", line):
                continue
            following = next(
                (x for x in lines[i + 1 : i + 8] if x.strip() and not x.startswith(("\t", " "))), ""
            )
            if not following.startswith(
                ("During handling of the above exception", "The above exception was")
            ):
                raised[re.sub(r"\d+", "N", line)[:150]] += 1
    if not raised:
        return "\n\nserver logs: no tracebacks"
    return table(
        "server logs: exceptions that ended a traceback",
        ["exception", "n"],
        [[line, n] for line, n in raised.most_common(8)],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=200)
    parser.add_argument("--arrive", type=float, default=60.0, help="seconds over which the workers arrive")
    parser.add_argument("--quota", type=int, default=3, help="items per worker")
    parser.add_argument("--items", type=int, default=300)
    parser.add_argument("--think", type=float, default=5.0, help="mean pause before each action, seconds")
    parser.add_argument("--cut-at", type=float, default=30.0, help="seconds after the first arrival")
    parser.add_argument("--cut-seconds", type=float, default=5.0)
    parser.add_argument("--no-cut", action="store_true")
    parser.add_argument("--gunicorn-workers", type=int, default=2)
    parser.add_argument("--link-opens-per-minute", type=int, default=30, help="the app's default is 30")
    parser.add_argument(
        "--port",
        type=int,
        default=8140,
        help="the proxy's port; app servers and the database proxy take the next three",
    )
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432/launch_bench")
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    parser.add_argument("--out", help="also write the tables to this file")
    parser.add_argument(
        "--records", help="write every request (kind, start, end, status, worker) as JSON lines"
    )
    args = parser.parse_args()

    pg_host, pg_port = "127.0.0.1", 5432
    db_proxy_port, app_ports = args.port + 3, [args.port + 1, args.port + 2]
    name = args.pg.rsplit("/", 1)[1]
    recreate_postgres(args.pg)
    uploads = tempfile.mkdtemp(prefix="launch-uploads-")
    env = server_env(args.pg)
    env.update(
        PROXY_COUNT="1",
        LINK_OPENS_PER_MINUTE=str(args.link_opens_per_minute),
        ANNOTATOR_UPLOAD_DIR=uploads,
        DB_PREPARED_STATEMENTS=os.environ.get("DB_PREPARED_STATEMENTS", "1"),
    )
    subprocess.run(
        [str(VENV_BIN / "python"), "manage.py", "migrate", "--noinput", "-v", "0"],
        cwd=ROOT,
        env=env,
        check=True,
    )
    subprocess.run([str(VENV_BIN / "python"), __file__, "--seed"], cwd=ROOT, env=env, check=True)

    cut_event = multiprocessing.get_context("fork").Event()
    database = start_proxy(functools.partial(DatabaseProxy, db_proxy_port, (pg_host, pg_port), cut_event))
    wait_for_port(db_proxy_port)
    env["DATABASE_URL"] = f"postgres://postgres@127.0.0.1:{db_proxy_port}/{name}"
    logs = Path(tempfile.mkdtemp(prefix="launch-logs-"))
    servers = []
    proxy = None
    try:
        for port in app_ports:
            servers.append(
                start_gunicorn(
                    env,
                    port,
                    args.gunicorn_workers,
                    "--timeout",
                    "60",
                    log_path=logs / f"gunicorn-{port}.log",
                )
            )
        study, setup = prepare_study(app_ports, args, env)
        warm_up(app_ports, study, args.gunicorn_workers)
        sent = multiprocessing.get_context("fork").Array("i", len(app_ports))
        proxy = start_proxy(functools.partial(RoundRobinProxy, args.port, app_ports, sent))
        wait_for_port(args.port)
        shared = Shared()
        load_start = os.getloadavg()
        cpu_start = {
            "app servers": sum(process_cpu_seconds(s.pid) for s in servers),
            "proxies": process_cpu_seconds(proxy.pid) + process_cpu_seconds(database.pid),
            "bench clients": sum(os.times()[:2]),
        }
        t0 = time.monotonic()
        deadline = t0 + args.arrive + 120
        rng = random.Random(7)
        arrivals = sorted(rng.uniform(0, args.arrive) for _ in range(args.workers))
        threads = []

        def arrive(worker: Worker, at: float) -> None:
            time.sleep(max(0.0, t0 + at - time.monotonic()))
            worker.visit(study["token"], study["batch"], args.think)

        for n, at in enumerate(arrivals):
            thread = threading.Thread(
                target=arrive, args=(Worker(n, args.port, shared, deadline), at), daemon=True
            )
            thread.start()
            threads.append(thread)
        cut = None
        if not args.no_cut:
            time.sleep(max(0.0, t0 + args.cut_at - time.monotonic()))
            start = time.monotonic()
            cut_event.set()
            time.sleep(args.cut_seconds)
            cut_event.clear()
            cut = (start, time.monotonic())
        for thread in threads:
            thread.join(timeout=max(1.0, deadline + 30 - time.monotonic()))
        cpu_end = {
            "app servers": sum(process_cpu_seconds(s.pid) for s in servers),
            "proxies": process_cpu_seconds(proxy.pid) + process_cpu_seconds(database.pid),
            "bench clients": sum(os.times()[:2]),
        }
        machine = [[f"{key} CPU s", f"{cpu_end[key] - cpu_start[key]:.1f}"] for key in cpu_start]
        machine += [
            ["wall s", f"{time.monotonic() - t0:.1f}"],
            ["cores", os.cpu_count()],
            ["load average 1 min", f"{load_start[0]:.1f} -> {os.getloadavg()[0]:.1f}"],
        ]
        outcome = verify(args.pg, study["batch"], study["k"], shared.acked)
        text = (
            table(
                "the admin's set-up, straight to each app server (before the launch)",
                ["step", "server", "status", "ms"],
                setup,
            )
            + "\n\n"
        )
        text += report(
            shared, cut, t0, args, outcome, Counter(dict(zip(app_ports, sent[:], strict=True))), machine
        )
        text += server_log_summary(logs)
        print(text)
        if args.out:
            Path(args.out).write_text(text + "\n")
        if args.records:
            with open(args.records, "w") as f:
                for r in shared.records:
                    f.write(
                        json.dumps(
                            {
                                "kind": r.kind,
                                "start": r.start - t0,
                                "end": r.end - t0,
                                "status": r.status,
                                "worker": r.worker,
                            }
                        )
                        + "\n"
                    )
    finally:
        if proxy is not None:
            proxy.terminate()
        for server in servers:
            server.terminate()
        for server in servers:
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
        database.terminate()
        shutil.rmtree(uploads, ignore_errors=True)
        print(f"\nthe servers' logs: {logs}")
        if not args.keep:
            import psycopg

            with psycopg.connect(f"{args.pg.rsplit('/', 1)[0]}/postgres", autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


if __name__ == "__main__" and len(sys.argv) >= 2 and sys.argv[1] == "--seed":
    seed()
elif __name__ == "__main__" and len(sys.argv) >= 3 and sys.argv[1] == "--quality-rule":
    quality_rule(int(sys.argv[2]))
elif __name__ == "__main__":
    main()
