"""Benchmark the annotator's round trip: GET the next item page, POST the scores.

Starts the app under gunicorn on 127.0.0.1 (a free port) against a fresh database,
logs in N annotators over HTTP and has them rate concurrently, then prints p50/p95
latency per round trip and round trips per second for 1 and 8 clients, the errors seen,
and the SQL queries one round trip costs (counted in-process for a small and a large
batch, to show the count does not grow with the batch).

    .venv/bin/python bench/annotate_bench.py                  # PostgreSQL and SQLite
    .venv/bin/python bench/annotate_bench.py --db sqlite --rounds 200

PostgreSQL: 127.0.0.1:5432 as postgres (trust), database ``bench_annotate`` (dropped and
re-created; override with --pg-url). Not part of the test suite: it measures, it does not
pass or fail.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = ROOT / ".venv" / "bin"
PASSWORD = "bench-password-not-secret-42"
SCORES = {
    "score_coherence": "4", "score_relevance": "4", "score_instruction_following": "3",
    "score_safety_compliance": "5", "score_fluency": "4", "constraint_0": "met", "constraint_1": "not_met",
}
ACTION = re.compile(r'action="(/annotate/item/(\d+)/submit/)"')
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


# --------------------------------------------------------------------------- server side
def server_env(database_url: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DATABASE_URL=database_url,
        DEBUG="0",
        SECRET_KEY="bench-only-secret-key-not-for-production-use-0123456789",
        ALLOWED_HOSTS="127.0.0.1,localhost,testserver",
        HTTPS_ONLY="0",
        LOG_LEVEL="ERROR",
        DJANGO_SETTINGS_MODULE="annotator.settings",
    )
    return env


def setup_database(env: dict[str, str], n_users: int, n_items: int) -> int:
    """Migrate, create annotators and a batch (in a child process); returns the batch id."""
    subprocess.run([str(VENV_BIN / "python"), "manage.py", "migrate", "--noinput", "-v", "0"],
                   cwd=ROOT, env=env, check=True)
    out = subprocess.run(
        [str(VENV_BIN / "python"), __file__, "--_seed", str(n_users), str(n_items)],
        cwd=ROOT, env=env, check=True, capture_output=True, text=True,
    ).stdout
    return int(json.loads(out.strip().splitlines()[-1])["batch"])


def _django():
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def _make_batch(name: str, n_items: int) -> int:
    from annotator.models import Batch, Item
    from hcs.rubric import Rubric

    batch = Batch.objects.create(name=name, rubric=Rubric.default().to_dict(), k=3)
    Item.objects.bulk_create(
        (
            Item(
                batch=batch, item_id=f"{name}-{i}", prompt_id=f"p{i // 2}", position=i, system_id=f"s{i % 2}",
                prompt=f"Plan a route to terminal {i} avoiding tolls; arrive before 8AM.",
                response="Take the ring road west (no tolls), leave by 6:40.\n" * 8,
                constraints=["avoid tolls", "arrive before 8AM"],
            )
            for i in range(n_items)
        ),
        batch_size=1000,
    )
    return batch.pk


def seed(n_users: int, n_items: int) -> None:
    _django()
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    group, _ = Group.objects.get_or_create(name="annotator")
    User = get_user_model()
    for i in range(n_users):
        user = User.objects.create_user(f"bench{i}", password=PASSWORD)
        user.groups.add(group)
    batch_id = _make_batch("bench", n_items)
    # Planner statistics, as autovacuum gathers them within a minute of an upload; without
    # them PostgreSQL plans the lease query for an empty table.
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    print(json.dumps({"batch": batch_id}))


def count_queries() -> None:
    """SQL queries for one round trip (GET next + POST), in a small and a large batch."""
    _django()
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    group, _ = Group.objects.get_or_create(name="annotator")
    result = {}
    for n_items in (20, 5000):
        batch_id = _make_batch(f"count-{n_items}-{time.time_ns()}", n_items)
        user = get_user_model().objects.create_user(f"counter-{n_items}-{time.time_ns()}", password=PASSWORD)
        user.groups.add(group)
        client = Client()
        client.force_login(user)
        counts = []
        for _ in range(3):
            with CaptureQueriesContext(connection) as ctx:
                page = client.get(f"/annotate/{batch_id}/next/").content.decode()
                action = ACTION.search(page).group(1)
                response = client.post(action, SCORES)
            assert response.status_code == 302, response.status_code
            counts.append(len(ctx.captured_queries))
        result[n_items] = counts[-1]
    print(json.dumps(result))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_gunicorn(env: dict[str, str], port: int, workers: int) -> subprocess.Popen:
    process = subprocess.Popen(
        [str(VENV_BIN / "gunicorn"), "annotator.wsgi", "--bind", f"127.0.0.1:{port}",
         "--workers", str(workers), "--log-level", "warning"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    for _ in range(200):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return process
        except OSError:
            if process.poll() is not None:
                raise RuntimeError(f"gunicorn exited: {process.stderr.read()}")
            time.sleep(0.05)
    process.terminate()
    raise RuntimeError("gunicorn did not start")


# --------------------------------------------------------------------------- client side
class Annotator:
    def __init__(self, port: int, username: str):
        self.port = port
        self.cookies: dict[str, str] = {}
        self.username = username

    def request(self, method: str, path: str, body: dict | None = None) -> tuple[int, str, dict]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
        data = None
        if body is not None:
            data = urlencode(body, doseq=True)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        conn.request(method, path, body=data, headers=headers)
        response = conn.getresponse()
        text = response.read().decode("utf-8", "replace")
        for header in response.headers.get_all("Set-Cookie") or []:
            cookie = SimpleCookie(header)
            for key, morsel in cookie.items():
                self.cookies[key] = morsel.value
        conn.close()
        return response.status, text, dict(response.headers)

    def login(self) -> None:
        status, page, _ = self.request("GET", "/login/")
        token = CSRF.search(page).group(1)
        status, _, headers = self.request(
            "POST", "/login/", {"csrfmiddlewaretoken": token, "username": self.username, "password": PASSWORD}
        )
        if status != 302 or "sessionid" not in self.cookies:
            raise RuntimeError(f"login failed for {self.username}: {status}")

    def round_trip(self, batch_id: int) -> str | None:
        """GET the next item, POST scores. Returns an error description or None."""
        status, page, _ = self.request("GET", f"/annotate/{batch_id}/next/")
        if status != 200:
            return f"GET {status}: {page[:120]!r}"
        match = ACTION.search(page)
        if match is None:
            return "no item offered"
        token = CSRF.search(page).group(1)
        status, text, headers = self.request("POST", match.group(1), {**SCORES, "csrfmiddlewaretoken": token})
        if status != 302:
            return f"POST {status}: {text[:120]!r}"
        return None


def process_cpu_seconds(root_pid: int) -> float:
    """CPU time (user + system) of a process and its children, from /proc (Linux only)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid, ppid = int(entry.name), int(fields[1])
        if pid == root_pid or ppid == root_pid:
            total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def run_clients(port: int, batch_id: int, annotators: list[Annotator], rounds: int, server_pid: int = 0) -> dict:
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    remaining = [rounds]
    barrier = threading.Barrier(len(annotators))

    def work(annotator: Annotator) -> None:
        barrier.wait()
        while True:
            with lock:
                if remaining[0] <= 0:
                    return
                remaining[0] -= 1
            start = time.perf_counter()
            try:
                error = annotator.round_trip(batch_id)
            except Exception as exc:  # a dropped connection is an error to report, not a crash
                error = f"{type(exc).__name__}: {exc}"
            elapsed = time.perf_counter() - start
            with lock:
                latencies.append(elapsed)
                if error:
                    errors.append(error)

    threads = [threading.Thread(target=work, args=(a,)) for a in annotators]
    cpu_before = process_cpu_seconds(server_pid) if server_pid else 0.0
    load_before = os.getloadavg()[0]
    wall = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - wall
    cpu = (process_cpu_seconds(server_pid) - cpu_before) if server_pid else 0.0
    latencies.sort()
    return {
        "n": len(latencies),
        "p50": statistics.median(latencies) * 1000,
        "p95": latencies[max(0, int(round(0.95 * len(latencies))) - 1)] * 1000,
        "rps": len(latencies) / wall,
        "errors": errors,
        "server_cpu_ms": cpu * 1000 / max(1, len(latencies)),
        "load": max(load_before, os.getloadavg()[0]),
    }


def bench_database(label: str, database_url: str, args) -> list[dict]:
    env = server_env(database_url)
    max_clients = max(args.clients)
    n_items = max(args.items, (args.rounds * len(args.clients) + args.warmup) // 3 + 100)
    batch_id = setup_database(env, max_clients, n_items)
    queries = json.loads(
        subprocess.run([str(VENV_BIN / "python"), __file__, "--_count"], cwd=ROOT, env=env, check=True,
                       capture_output=True, text=True).stdout.strip().splitlines()[-1]
    )
    port = free_port()
    server = start_gunicorn(env, port, args.workers)
    rows = []
    try:
        annotators = [Annotator(port, f"bench{i}") for i in range(max_clients)]
        for a in annotators:
            a.login()
        run_clients(port, batch_id, annotators[:1], args.warmup)  # warm caches and connections
        for n in args.clients:
            result = run_clients(port, batch_id, annotators[:n], args.rounds, server.pid)
            rows.append({"db": label, "clients": n, **result, "queries": queries})
    finally:
        server.terminate()
        server.wait(timeout=10)
    return rows


def postgres_url(args) -> str:
    import psycopg

    base = args.pg_url.rsplit("/", 1)[0]
    name = args.pg_url.rsplit("/", 1)[1]
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return args.pg_url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", choices=["postgres", "sqlite", "both"], default="both")
    parser.add_argument("--pg-url", default="postgres://postgres@127.0.0.1:5432/bench_annotate")
    parser.add_argument("--clients", type=lambda s: [int(x) for x in s.split(",")], default=[1, 8])
    parser.add_argument("--rounds", type=int, default=400, help="round trips per client count")
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--items", type=int, default=3000, help="items in the benchmark batch (at least)")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn sync workers")
    args = parser.parse_args()

    rows = []
    if args.db in ("postgres", "both"):
        rows += bench_database("PostgreSQL", postgres_url(args), args)
    if args.db in ("sqlite", "both"):
        with tempfile.TemporaryDirectory() as tmp:
            rows += bench_database("SQLite", f"sqlite:///{tmp}/bench.sqlite3", args)

    print(f"\nRound trip = GET next item page + POST scores; gunicorn --workers {args.workers}; "
          f"{os.cpu_count()} CPUs; {args.rounds} round trips per row.\n")
    header = (
        f"{'database':<11} {'clients':>7} {'trips':>6} {'p50 ms':>8} {'p95 ms':>8} {'trips/s':>8} {'errors':>6}"
        f" {'app CPU ms/trip':>15} {'load':>5}  SQL/trip (20 items | 5000 items)"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        q = r["queries"]
        print(f"{r['db']:<11} {r['clients']:>7} {r['n']:>6} {r['p50']:>8.1f} {r['p95']:>8.1f} {r['rps']:>8.1f} "
              f"{len(r['errors']):>6} {r['server_cpu_ms']:>15.1f} {r['load']:>5.1f}  {q['20']} | {q['5000']}")
    print("\napp CPU = gunicorn workers' CPU time per round trip (the database server's is not included);"
          " load = the machine's 1-minute load average during the row (other work shares these CPUs).")
    for r in rows:
        for error in sorted(set(r["errors"]))[:5]:
            print(f"  {r['db']} x{r['clients']} error: {error}")


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "--_seed":
        seed(int(sys.argv[2]), int(sys.argv[3]))
    elif len(sys.argv) >= 2 and sys.argv[1] == "--_count":
        count_queries()
    else:
        main()
