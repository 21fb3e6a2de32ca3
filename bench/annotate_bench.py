"""Benchmark the annotator's round trip: GET the next item page, POST the scores.

Starts the app under gunicorn on 127.0.0.1 (a free port) against a fresh database,
logs in N annotators over HTTP and has them rate concurrently, then prints p50/p95
latency per round trip and round trips per second for 1 and 8 clients, the errors seen,
and the SQL queries one round trip costs (counted in-process for a small and a large
batch, to show the count does not grow with the batch). Further rows (mode htmx) time
what the page does with JavaScript on: one POST of scores answered by the next item.

    .venv/bin/python bench/annotate_bench.py                  # PostgreSQL and SQLite
    .venv/bin/python bench/annotate_bench.py --db sqlite --rounds 200

PostgreSQL: 127.0.0.1:5432 as postgres (trust), database ``bench_annotate`` (dropped and
re-created; override with --pg-url). Not part of the test suite: it measures, it does not
pass or fail.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from annotator_http import (
    ACTION,
    PASSWORD,
    ROOT,
    SCORES,
    VENV_BIN,
    Annotator,
    django_setup,
    free_port,
    make_batch,
    recreate_postgres,
    server_env,
    setup_database,
    start_gunicorn,
)


def count_queries() -> None:
    """SQL queries for one round trip (GET next + POST), in a small and a large batch."""
    django_setup()
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    group, _ = Group.objects.get_or_create(name="annotator")
    result = {}
    for n_items in (20, 5000):
        batch_id = make_batch(f"count-{n_items}-{time.time_ns()}", n_items)
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


class HtmxAnnotator(Annotator):
    """What the browser does with JavaScript on: after the first page, each POST of scores
    answers with the next item's fragment (one request per item)."""

    CSRF_FIELD = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')

    def __init__(self, port: int, username: str):
        super().__init__(port, username)
        self.page = ""

    def extra_headers(self) -> dict[str, str]:
        return {"HX-Request": "true", "HX-Target": "rate-area"} if self.page else {}

    def round_trip(self, batch_id: int) -> str | None:
        if not self.page:
            status, self.page, _ = self.request("GET", f"/annotate/{batch_id}/next/")
            if status != 200:
                return f"GET {status}"
        match = ACTION.search(self.page)
        if match is None:
            return "no item offered"
        token = self.CSRF_FIELD.search(self.page).group(1)
        status, text, _ = self.request("POST", match.group(1), {**SCORES, "csrfmiddlewaretoken": token})
        if status != 200 or ACTION.search(text) is None:
            self.page = ""
            return f"htmx POST {status}: {text[:120]!r}"
        self.page = text
        return None


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
    flows = 2 if args.htmx else 1
    n_items = max(args.items, (args.rounds * len(args.clients) * flows + args.warmup) // 3 + 100)
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
            rows.append({"db": label, "mode": "page", "clients": n, **result, "queries": queries})
        if args.htmx:
            swappers = [HtmxAnnotator(port, a.username) for a in annotators]
            for fresh, logged_in in zip(swappers, annotators, strict=True):
                fresh.cookies = dict(logged_in.cookies)
            for n in args.clients:
                result = run_clients(port, batch_id, swappers[:n], args.rounds, server.pid)
                rows.append({"db": label, "mode": "htmx", "clients": n, **result, "queries": queries})
    finally:
        server.terminate()
        server.wait(timeout=10)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", choices=["postgres", "sqlite", "both"], default="both")
    parser.add_argument("--pg-url", default="postgres://postgres@127.0.0.1:5432/bench_annotate")
    parser.add_argument("--clients", type=lambda s: [int(x) for x in s.split(",")], default=[1, 8])
    parser.add_argument("--rounds", type=int, default=400, help="round trips per client count")
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--items", type=int, default=3000, help="items in the benchmark batch (at least)")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn sync workers")
    parser.add_argument("--no-htmx", dest="htmx", action="store_false",
                        help="skip the rows for the htmx flow (one POST per item)")
    args = parser.parse_args()

    rows = []
    if args.db in ("postgres", "both"):
        rows += bench_database("PostgreSQL", recreate_postgres(args.pg_url), args)
    if args.db in ("sqlite", "both"):
        with tempfile.TemporaryDirectory() as tmp:
            rows += bench_database("SQLite", f"sqlite:///{tmp}/bench.sqlite3", args)

    print(f"\nRound trip (mode page) = GET the next item page + POST the scores (redirect); mode htmx = what"
          f" the page does with JavaScript: one POST of scores answered by the next item's fragment.\n"
          f"gunicorn --workers {args.workers}; {os.cpu_count()} CPUs; {args.rounds} round trips per row.\n")
    header = (
        f"{'database':<11} {'mode':<5} {'clients':>7} {'trips':>6} {'p50 ms':>8} {'p95 ms':>8} {'trips/s':>8} {'errors':>6}"
        f" {'app CPU ms/trip':>15} {'load':>5}  SQL per page trip (20 | 5000 items)"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        q = r["queries"]
        print(f"{r['db']:<11} {r['mode']:<5} {r['clients']:>7} {r['n']:>6} {r['p50']:>8.1f} {r['p95']:>8.1f} {r['rps']:>8.1f} "
              f"{len(r['errors']):>6} {r['server_cpu_ms']:>15.1f} {r['load']:>5.1f}  {q['20']} | {q['5000']}")
    print("\napp CPU = gunicorn workers' CPU time per round trip (the database server's is not included);"
          " load = the machine's 1-minute load average during the row (other work shares these CPUs).")
    for r in rows:
        for error in sorted(set(r["errors"]))[:5]:
            print(f"  {r['db']} {r['mode']} x{r['clients']} error: {error}")


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "--_count":
        count_queries()
    else:
        main()
