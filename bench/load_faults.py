"""Load with faults: simulated annotators rate over HTTP while a worker is killed and PostgreSQL restarts.

gunicorn (2 sync workers) on 127.0.0.1 against a fresh PostgreSQL database; N annotators log in,
GET the next item, POST scores, for a fixed time. During the run one gunicorn worker gets SIGKILL
(the master starts another) and PostgreSQL is restarted once (pg_ctlcluster). Clients behave like a
browser user: after a connection error or a 5xx they reload the page, or send the same form again
(same item, same CSRF token), with a growing pause. Some acknowledged forms are sent a second time on
purpose (a double click). Afterwards the script reads the database and prints what held:
submissions acknowledged vs stored (0 lost), duplicates, items over k, 5xx outside the restart
window, latency.

    .venv/bin/python bench/load_faults.py                         # 50 annotators, 60 s, both faults
    .venv/bin/python bench/load_faults.py --clients 10 --seconds 10 --no-faults --db sqlite

PostgreSQL: 127.0.0.1:5432 as postgres (trust), database ``ops_load`` (dropped and re-created;
--pg-url). Restarting PostgreSQL needs the right to run pg_ctlcluster (root or postgres). Bounded:
the run stops at --seconds, every request has a timeout, retries stop at the deadline. Loopback only.
Exit status 1 when a check fails. tests/bench/test_load_faults.py runs a short version without faults.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

from annotator_http import (
    ACTION,
    CSRF,
    PASSWORD,
    ROOT,
    SCORES,
    VENV_BIN,
    Annotator,
    child_pids,
    django_setup,
    free_port,
    recreate_postgres,
    server_env,
    setup_database,
    start_gunicorn,
)
from load_faults_report import (
    RESTART_GRACE_S,
    failed_checks,
    percentile,
    print_report,
    server_log_summary,
    timeline,
)

ALREADY = "You had already submitted this item"


@dataclass
class Record:
    kind: str  # "GET next", "POST submit", "login"
    start: float
    end: float
    status: int | None  # None: connection error or timeout
    error: str = ""
    retry_after: bool = False  # the answer carried Retry-After


@dataclass
class Shared:
    lock: threading.Lock = field(default_factory=threading.Lock)
    records: list[Record] = field(default_factory=list)
    acked: set[tuple[str, int]] = field(default_factory=set)
    refused: set[tuple[str, int]] = field(default_factory=set)  # 302 with an error message on the next page
    post_retries: int = 0  # a POST sent again after a connection error or 5xx
    double_submits: int = 0  # an acknowledged form sent again on purpose
    already_seen: int = 0  # pages that said "you had already submitted this item"
    unexpected: list[str] = field(default_factory=list)  # 4xx and other surprises
    deadline: float = 0.0

    def add(self, record: Record) -> None:
        with self.lock:
            self.records.append(record)


class Browser(threading.Thread):
    """One annotator at one browser, until the deadline."""

    def __init__(
        self,
        port: int,
        username: str,
        batch_id: int,
        start: threading.Barrier,
        shared: Shared,
        *,
        seed: int,
        think: tuple[float, float],
        double_submit: float,
        login_timeout: float = 180,
    ):
        super().__init__(daemon=True)
        self.http = Annotator(port, username, timeout=30)
        self.username, self.batch_id, self.start_line, self.shared = username, batch_id, start, shared
        self.deadline = time.monotonic() + login_timeout  # for the first login; then the run's end
        self.rng = random.Random(seed)
        self.think, self.double_submit = think, double_submit

    def send(self, kind: str, method: str, path: str, body: dict | None = None):
        """One request, repeated after a connection error or a 5xx as a user would; None at the deadline."""
        for attempt in range(1000):
            start = time.monotonic()
            try:
                status, text, headers = self.http.request(method, path, body)
                error = "" if status < 500 else text[:200]
            except (OSError, http.client.HTTPException) as exc:
                status, text, headers, error = None, "", {}, f"{type(exc).__name__}: {exc}"
            self.shared.add(Record(kind, start, time.monotonic(), status, error, "Retry-After" in headers))
            if status is not None and status < 500:
                return status, text, headers
            if time.monotonic() + 0.5 > self.deadline:
                return None
            if method == "POST" and kind == "POST submit":
                with self.shared.lock:
                    self.shared.post_retries += 1
            time.sleep(min(2.0, 0.2 * 1.5**attempt) * self.rng.uniform(0.5, 1.0))
        return None

    def login(self) -> bool:
        while time.monotonic() < self.deadline:
            got = self.send("login", "GET", "/login/")
            if got is None:
                return False
            match = CSRF.search(got[1])
            form = {
                "csrfmiddlewaretoken": match.group(1) if match else "",
                "username": self.username,
                "password": PASSWORD,
            }
            got = self.send("login", "POST", "/login/", form)
            if got is not None and got[0] == 302 and "sessionid" in self.http.cookies:
                return True
            if got is not None:
                self.note(f"login {got[0]}")
        return False

    def note(self, what: str) -> None:
        with self.shared.lock:
            self.shared.unexpected.append(f"{self.username}: {what}")

    def run(self) -> None:
        logged_in = self.login()  # everybody logs in first (password hashing is slow by design) ...
        self.start_line.wait()  # ... then the timed run starts for all at once
        self.deadline = self.shared.deadline
        if not logged_in:
            self.note("could not log in")
            return
        last: tuple[str, int] | None = None  # the acknowledged submission the next page reports on
        while time.monotonic() < self.deadline:
            got = self.send("GET next", "GET", f"/annotate/{self.batch_id}/next/")
            if got is None:
                return
            status, page, headers = got
            if status == 302 and "/login/" in headers.get("Location", ""):
                self.note("sent to the login page; logging in again")
                if not self.login():
                    return
                continue
            if status != 200:
                self.note(f"GET next {status}")
                time.sleep(0.5)
                continue
            if last is not None and 'class="message error"' in page:
                with self.shared.lock:
                    self.shared.acked.discard(last)
                    self.shared.refused.add(last)
            if ALREADY in page:
                with self.shared.lock:
                    self.shared.already_seen += 1
            last = None
            match = ACTION.search(page)
            if match is None:  # nothing left for this annotator: look again later
                time.sleep(0.5)
                continue
            form = {**SCORES, "csrfmiddlewaretoken": CSRF.search(page).group(1)}
            time.sleep(self.rng.uniform(*self.think))
            got = self.send("POST submit", "POST", match.group(1), form)
            if got is None:
                return
            if got[0] != 302:
                self.note(f"POST {got[0]}: {got[1][:120]!r}")
                continue
            last = (self.username, int(match.group(2)))
            with self.shared.lock:
                self.shared.acked.add(last)
            if self.rng.random() < self.double_submit:  # a double click: the same form once more
                with self.shared.lock:
                    self.shared.double_submits += 1
                again = self.send("POST submit", "POST", match.group(1), form)
                if again is not None and again[0] != 302:
                    self.note(f"double submit {again[0]}")


# --------------------------------------------------------------------------- faults
def pg_cluster() -> tuple[str, str]:
    out = subprocess.run(["pg_lsclusters", "--no-header"], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        version, name, port = line.split()[:3]
        if port == "5432":
            return version, name
    raise RuntimeError(f"no PostgreSQL cluster on port 5432 in pg_lsclusters:\n{out}")


def run_faults(master: subprocess.Popen, t0: float, kill_at: float, restart_at: float, log: dict) -> None:
    time.sleep(max(0.0, t0 + kill_at - time.monotonic()))
    workers = child_pids(master.pid)
    victim = workers[0]
    os.kill(victim, signal.SIGKILL)
    log["killed"] = (victim, time.monotonic() - t0)
    while time.monotonic() - t0 < restart_at:
        now = child_pids(master.pid)
        if "respawned" not in log and len(now) == len(workers) and victim not in now:
            log["respawned"] = time.monotonic() - t0
        time.sleep(0.05)
    version, name = pg_cluster()
    start = time.monotonic()
    done = subprocess.run(
        ["pg_ctlcluster", "--skip-systemctl-redirect", version, name, "restart"],
        capture_output=True,
        text=True,
    )
    log["restart"] = (
        start - t0,
        time.monotonic() - t0,
        f"{version}/{name}",
        done.returncode,
        done.stderr.strip(),
    )


# --------------------------------------------------------------------------- checks
def stored_state(batch_id: int) -> None:
    """In a child process on the benchmark database: what the database holds for the batch."""
    django_setup()
    from django.db.models import Count

    from annotator.models import Annotation, Batch, Item

    batch = Batch.objects.get(pk=batch_id)
    annotations = Annotation.objects.filter(item__batch=batch)
    per_pair = annotations.values("item_id", "annotator_id").annotate(n=Count("id")).filter(n__gt=1)
    per_item = annotations.values("item_id").annotate(n=Count("id"))
    counts = {row["item_id"]: row["n"] for row in per_item}
    counters = dict(Item.objects.filter(batch=batch).values_list("pk", "n_annotations"))
    print(
        json.dumps(
            {
                "stored": list(annotations.values_list("annotator__username", "item_id")),
                "duplicates": sum(row["n"] - 1 for row in per_pair),
                "over_k": sum(1 for n in counts.values() if n > batch.k),
                "items_full": sum(1 for n in counts.values() if n >= batch.k),
                "items": len(counters),
                "counter_mismatch": sum(1 for pk, n in counters.items() if n != counts.get(pk, 0)),
            }
        )
    )


def run_load(
    *,
    database_url: str,
    clients: int,
    seconds: float,
    items: int,
    workers: int = 2,
    faults: bool = True,
    kill_at: float | None = None,
    restart_at: float | None = None,
    think: tuple[float, float] = (0.2, 1.0),
    double_submit: float = 0.03,
    k: int = 3,
    seed: int = 1,
) -> dict:
    """Run the load (and the faults) against a fresh database; returns the figures."""
    env = server_env(database_url)
    batch_id = setup_database(env, clients, items, k)
    port = free_port()
    server_log = tempfile.NamedTemporaryFile("w+", suffix=".log", prefix="load_faults_", delete=False)
    server_log.close()
    master = start_gunicorn(env, port, workers, "--timeout", "30", log_path=server_log.name)
    shared = Shared()
    fault_log: dict = {}
    try:
        login_start = time.monotonic()

        def go() -> None:  # run by the last browser to reach the start line
            shared.deadline = time.monotonic() + seconds

        start_line = threading.Barrier(clients + 1, action=go)
        browsers = [
            Browser(
                port,
                f"bench{i}",
                batch_id,
                start_line,
                shared,
                seed=seed * 1000 + i,
                think=think,
                double_submit=double_submit,
            )
            for i in range(clients)
        ]
        for b in browsers:
            b.start()
        start_line.wait(timeout=240)
        t0 = time.monotonic()
        login_seconds = t0 - login_start
        deadline = shared.deadline
        faulter = None
        if faults:
            faulter = threading.Thread(
                target=run_faults,
                daemon=True,
                args=(
                    master,
                    t0,
                    seconds / 3 if kill_at is None else kill_at,
                    seconds * 0.55 if restart_at is None else restart_at,
                    fault_log,
                ),
            )
            faulter.start()
        for b in browsers:
            b.join(timeout=max(1.0, deadline - time.monotonic()) + 35)
        if faulter is not None:
            faulter.join(timeout=60)
        wall = time.monotonic() - t0
    finally:
        master.terminate()
        try:
            master.wait(timeout=20)
        except subprocess.TimeoutExpired:
            master.kill()
    out = subprocess.run(
        [str(VENV_BIN / "python"), __file__, "--_check", str(batch_id)],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    state = json.loads(out.strip().splitlines()[-1])
    stored = {(u, pk) for u, pk in state["stored"]}

    window = None
    if "restart" in fault_log:
        window = (t0 + fault_log["restart"][0], t0 + fault_log["restart"][1] + RESTART_GRACE_S)

    def in_window(r: Record) -> bool:
        return window is not None and r.end >= window[0] and r.start <= window[1]

    logins = [r for r in shared.records if r.kind == "login"]
    records = [r for r in shared.records if r.kind != "login" or r.start >= t0]
    answered = [r for r in records if r.status is not None and r.status < 500 and r.kind != "login"]
    quiet = [r for r in answered if not in_window(r)]
    return {
        "database": "PostgreSQL" if database_url.startswith("postgres") else "SQLite",
        "clients": clients,
        "seconds": seconds,
        "wall": wall,
        "workers": workers,
        "items": items,
        "k": k,
        "faults": fault_log,
        "acknowledged": len(shared.acked),
        "stored": len(stored),
        "lost": len(shared.acked - stored),
        "stored_unacknowledged": len(stored - shared.acked - shared.refused),
        "refused": len(shared.refused),
        "duplicates": state["duplicates"],
        "over_k": state["over_k"],
        "items_full": state["items_full"],
        "counter_mismatch": state["counter_mismatch"],
        "post_retries": shared.post_retries,
        "double_submits": shared.double_submits,
        "already_seen": shared.already_seen,
        "requests": len(records),
        "login_seconds": login_seconds,
        "login_p95_ms": percentile([r.end - r.start for r in logins if r.status], 0.95) * 1000,
        "acks_per_s": len(shared.acked) / wall,
        "http_5xx_in_window": sum(1 for r in records if r.status and r.status >= 500 and in_window(r)),
        "http_5xx_outside_window": sum(
            1 for r in records if r.status and r.status >= 500 and not in_window(r)
        ),
        "connection_errors": sum(1 for r in records if r.status is None),
        "statuses_5xx": {
            str(code): sum(1 for r in records if r.status == code)
            for code in sorted({r.status for r in records if r.status and r.status >= 500})
        },
        "p50_ms": percentile([r.end - r.start for r in answered], 0.50) * 1000,
        "p95_ms": percentile([r.end - r.start for r in answered], 0.95) * 1000,
        "p95_outside_window_ms": percentile([r.end - r.start for r in quiet], 0.95) * 1000,
        "max_ms": max((r.end - r.start for r in answered), default=float("nan")) * 1000,
        "errors_5xx": sorted({r.error[:160] for r in records if r.status and r.status >= 500})[:5],
        "errors_connection": sorted({r.error[:160] for r in records if r.status is None})[:5],
        "unexpected": shared.unexpected[:10],
        "timeline": timeline(records, t0, seconds, window),
        "server_log": server_log_summary(server_log.name),
        "n_unexpected": len(shared.unexpected),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", choices=["postgres", "sqlite"], default="postgres")
    parser.add_argument("--pg-url", default="postgres://postgres@127.0.0.1:5432/ops_load")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-faults", action="store_true")
    parser.add_argument("--kill-at", type=float, default=None, help="seconds into the run (default: a third)")
    parser.add_argument("--restart-at", type=float, default=None, help="seconds into the run (default: 55%%)")
    parser.add_argument(
        "--double-submit", type=float, default=0.03, help="share of acknowledged forms sent twice"
    )
    args = parser.parse_args()
    if args.seconds > 600 or args.clients > 200:
        parser.error("bounded: at most 600 s and 200 annotators")
    faults = not args.no_faults
    if faults and args.db != "postgres":
        parser.error("the PostgreSQL restart needs --db postgres (or --no-faults)")
    with tempfile.TemporaryDirectory() as tmp:
        url = recreate_postgres(args.pg_url) if args.db == "postgres" else f"sqlite:///{tmp}/load.sqlite3"
        result = run_load(
            database_url=url,
            clients=args.clients,
            seconds=args.seconds,
            items=args.items,
            workers=args.workers,
            faults=faults,
            kill_at=args.kill_at,
            restart_at=args.restart_at,
            double_submit=args.double_submit,
        )
    print_report(result)
    return 1 if failed_checks(result) else 0


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--_check":
        stored_state(int(sys.argv[2]))
    else:
        sys.exit(main())
