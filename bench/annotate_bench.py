"""Benchmark the annotator's round trip: GET the next item page, POST the scores.

Starts the app under gunicorn on 127.0.0.1 (a free port) against a fresh database,
logs in N annotators over HTTP and has them rate concurrently, then prints p50/p95
latency per round trip and round trips per second for 1 and 8 clients, the errors seen,
and the SQL queries one round trip costs (counted in-process for a small and a large
batch, to show the count does not grow with the batch). Further rows (mode htmx) time
what the page does with JavaScript on: one POST of scores answered by the next item.

Side by side (mode bare): the same server also serves a bare Django view (bench/bare_wsgi.py,
"ok" through the same middleware) and the same clients request it in the same run, block by
block with the rating rows. On a machine shared with other work the absolute figures swing
with the load; the ratio of a round trip to a bare request, and the app CPU per round trip
against the bare view's, do not swing nearly as much. With --repeat N every block runs N times,
interleaved, and the medians are printed. Each gunicorn worker's resident memory is read at its
start (app loaded), after its first request and at the end (after every round trip of the run), with
the requests it served (bench/worker_stats.py).

    .venv/bin/python bench/annotate_bench.py                  # PostgreSQL and SQLite
    .venv/bin/python bench/annotate_bench.py --db sqlite --rounds 200 --repeat 3

PostgreSQL: 127.0.0.1:5432 as postgres (trust), database ``bench_annotate`` (dropped and
re-created; override with --pg-url; a query string passes server settings to the app's connections,
e.g. ``…/bench_annotate?options=-c%20synchronous_commit%3Doff``). Not part of the test suite: it
measures, it does not pass or fail.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
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
    child_pids,
    django_setup,
    free_port,
    make_batch,
    make_study,
    postgres_backends_cpu_seconds,
    postgres_database_name,
    process_cpu_seconds,
    recreate_postgres,
    rss_mb,
    server_env,
    setup_database,
    start_gunicorn,
)


def count_queries(study: bool = False) -> None:
    """SQL queries for one round trip (GET next + POST), in a small and a large batch (a study
    batch with quality control when ``study``)."""
    django_setup()
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    group, _ = Group.objects.get_or_create(name="annotator")
    result = {}
    htmx_headers = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "rate-area"}
    for n_items in (20, 5000):
        batch_id = make_batch(f"count-{n_items}-{time.time_ns()}", n_items)
        user = get_user_model().objects.create_user(f"counter-{n_items}-{time.time_ns()}", password=PASSWORD)
        user.groups.add(group)
        if study:
            make_study(batch_id, [user])
        client = Client()
        client.force_login(user)
        counts = []
        for _ in range(3):
            with CaptureQueriesContext(connection) as ctx:
                page = client.get(f"/annotate/{batch_id}/next/").content.decode()
                action = ACTION.search(page).group(1)
                response = client.post(action, SCORES)
            assert response.status_code == 302, response.status_code
            counts.append(statements(ctx))
        result[n_items] = counts[-1]
        page = client.get(f"/annotate/{batch_id}/next/").content.decode()
        for _ in range(3):  # the htmx flow: one POST per item, answered by the next item
            with CaptureQueriesContext(connection) as ctx:
                response = client.post(ACTION.search(page).group(1), SCORES, **htmx_headers)
            assert response.status_code == 200, response.status_code
            page = response.content.decode()
        result[f"htmx {n_items}"] = statements(ctx)
    print(json.dumps(result))


def statements(ctx) -> int:
    """SQL statements captured, not counting BEGIN/COMMIT (which SQLite and psycopg 3 log too)."""
    return sum(
        1 for q in ctx.captured_queries if q["sql"].split(None, 1)[0].upper() not in ("BEGIN", "COMMIT")
    )


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


class BareClient(Annotator):
    """One request to the bare view per round trip (same cookies, same middleware)."""

    def round_trip(self, batch_id: int) -> str | None:
        status, text, _ = self.request("GET", "/bench/bare/")
        return None if status == 200 and text == "ok" else f"bare GET {status}"


def run_clients(
    port: int,
    batch_id: int,
    annotators: list[Annotator],
    rounds: int,
    server_pid: int = 0,
    database: str = "",
) -> dict:
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
    db_before = postgres_backends_cpu_seconds(database) if database else 0.0
    load_before = os.getloadavg()[0]
    wall = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - wall
    cpu = (process_cpu_seconds(server_pid) - cpu_before) if server_pid else 0.0
    db_cpu = (postgres_backends_cpu_seconds(database) - db_before) if database else 0.0
    latencies.sort()
    return {
        "n": len(latencies),
        "p50": statistics.median(latencies) * 1000,
        "p95": latencies[max(0, int(round(0.95 * len(latencies))) - 1)] * 1000,
        "rps": len(latencies) / wall,
        "errors": errors,
        "server_cpu_ms": cpu * 1000 / max(1, len(latencies)),
        "db_cpu_ms": db_cpu * 1000 / max(1, len(latencies)),
        "load": max(load_before, os.getloadavg()[0]),
    }


def worker_rows(pids: list[int], rss_end: list[float], stats_dir: str) -> list[dict]:
    """Per worker: its memory at start, after its first request and at the end, and the requests it served."""
    rows = []
    for pid, rss in zip(pids, rss_end):
        path = Path(stats_dir, f"{pid}.json")
        stats = json.loads(path.read_text()) if path.exists() else {"served": {}, "memory": {}}
        rows.append({"pid": pid, "end": rss, **stats["memory"], "served": stats["served"]})
    return rows


def bench_database(label: str, database_url: str, args) -> list[dict]:
    stats_dir = tempfile.mkdtemp(prefix="worker-stats-")
    env = {**server_env(database_url), "BENCH_WORKER_STATS": stats_dir}
    max_clients = max(args.clients)
    flows = 2 if args.htmx else 1
    n_items = max(
        args.items, (args.rounds * len(args.clients) * flows * args.repeat + args.warmup) // 3 + 100
    )
    batch_id = setup_database(env, max_clients, n_items, study=args.study)
    database = postgres_database_name(database_url) if database_url.startswith("postgres") else ""
    queries = json.loads(
        subprocess.run(
            [str(VENV_BIN / "python"), __file__, "--_count", *(["study"] if args.study else [])],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    port = free_port()
    here = Path(__file__).parent
    server = start_gunicorn(
        env,
        port,
        args.workers,
        "-c",
        str(here / "worker_stats.py"),
        "--pythonpath",
        str(here),
        app="bare_wsgi",
    )
    runs: dict[tuple[str, int], list[dict]] = {}
    try:
        annotators = [Annotator(port, f"bench{i}") for i in range(max_clients)]
        for a in annotators:
            a.login()
        clients = {"page": annotators}
        if args.htmx:
            clients["htmx"] = [HtmxAnnotator(port, a.username) for a in annotators]
        clients["bare"] = [BareClient(port, a.username) for a in annotators]
        for mode in ("htmx", "bare"):
            for fresh, logged_in in zip(clients.get(mode, []), annotators):
                fresh.cookies = dict(logged_in.cookies)
        run_clients(port, batch_id, annotators[:1], args.warmup)  # warm caches and connections
        for _ in range(args.repeat):
            for n in args.clients:
                for mode, group in clients.items():  # interleaved: each block sees much the same load
                    runs.setdefault((mode, n), []).append(
                        run_clients(port, batch_id, group[:n], args.rounds, server.pid, database)
                    )
        pids = child_pids(server.pid)
        worker_rss = [rss_mb(pid) for pid in pids]
    finally:
        server.terminate()
        try:
            server.wait(timeout=60)  # a busy machine can take a while to stop four workers
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    workers = worker_rows(pids, worker_rss, stats_dir)
    shutil.rmtree(stats_dir, ignore_errors=True)
    trips = args.warmup + sum(
        r["n"] for (mode, _), results in runs.items() if mode != "bare" for r in results
    )
    rows = []
    for (mode, n), results in runs.items():
        row = {
            key: statistics.median(r[key] for r in results)
            for key in ("p50", "p95", "rps", "server_cpu_ms", "db_cpu_ms", "load")
        }
        row.update(
            db=label,
            mode=mode,
            clients=n,
            n=sum(r["n"] for r in results),
            errors=[e for r in results for e in r["errors"]],
            queries=queries,
            workers=workers,
            trips=trips,
        )
        bare = statistics.median(r["p50"] for r in runs[("bare", n)])
        bare_cpu = statistics.median(r["server_cpu_ms"] for r in runs[("bare", n)])
        row["x_bare"] = row["p50"] / bare if bare else 0.0
        row["cpu_x_bare"] = row["server_cpu_ms"] / bare_cpu if bare_cpu else 0.0
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", choices=["postgres", "sqlite", "both"], default="both")
    parser.add_argument("--pg-url", default="postgres://postgres@127.0.0.1:5432/bench_annotate")
    parser.add_argument("--clients", type=lambda s: [int(x) for x in s.split(",")], default=[1, 8])
    parser.add_argument("--rounds", type=int, default=400, help="round trips per block")
    parser.add_argument(
        "--repeat", type=int, default=1, help="blocks per row, interleaved; medians are printed"
    )
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--items", type=int, default=3000, help="items in the benchmark batch (at least)")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn sync workers")
    parser.add_argument(
        "--study",
        action="store_true",
        help="rate a study batch with quality control: consent and instructions (given), a quota,"
        " a session length, a gold check every 50 items (check pages are rated like items)",
    )
    parser.add_argument(
        "--no-htmx",
        dest="htmx",
        action="store_false",
        help="skip the rows for the htmx flow (one POST per item)",
    )
    args = parser.parse_args()

    rows = []
    if args.db in ("postgres", "both"):
        rows += bench_database(
            "PostgreSQL" + (" study" if args.study else ""), recreate_postgres(args.pg_url), args
        )
    if args.db in ("sqlite", "both"):
        with tempfile.TemporaryDirectory() as tmp:
            rows += bench_database(
                "SQLite" + (" study" if args.study else ""), f"sqlite:///{tmp}/bench.sqlite3", args
            )

    print(
        f"\nRound trip (mode page) = GET the next item page + POST the scores (redirect); mode htmx = what"
        f" the page does with JavaScript: one POST of scores answered by the next item's fragment;"
        f" mode bare = one GET of a bare Django view on the same server (the yardstick).\n"
        f"gunicorn --workers {args.workers}; {os.cpu_count()} CPUs; {args.rounds} round trips per block,"
        f" {args.repeat} block(s) per row (medians).\n"
    )
    header = (
        f"{'database':<16} {'mode':<5} {'clients':>7} {'trips':>6} {'p50 ms':>7} {'p95 ms':>7} {'trips/s':>8}"
        f" {'errors':>6} {'app CPU ms':>10} {'DB CPU ms':>9} {'p50 x bare':>10} {'CPU x bare':>10} {'load':>5}  SQL per trip"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        q = r["queries"]
        sql = (
            ""
            if r["mode"] == "bare"
            else (f"{q['20']} | {q['5000']}" if r["mode"] == "page" else f"{q['htmx 20']} | {q['htmx 5000']}")
        )
        print(
            f"{r['db']:<16} {r['mode']:<5} {r['clients']:>7} {r['n']:>6} {r['p50']:>7.1f} {r['p95']:>7.1f}"
            f" {r['rps']:>8.1f} {len(r['errors']):>6} {r['server_cpu_ms']:>10.1f} {r['db_cpu_ms']:>9.1f} {r['x_bare']:>10.2f}"
            f" {r['cpu_x_bare']:>10.2f} {r['load']:>5.1f}  {sql}"
        )
    print(
        "\napp CPU = gunicorn workers' CPU time per round trip; DB CPU = the PostgreSQL server processes' serving"
        " the bench database (SQLite runs inside the workers: 0);"
        " x bare = that figure over the bare view's in the same run; SQL per trip = queries for a batch of"
        " 20 | 5000 items, not counting BEGIN/COMMIT; load = the machine's 1-minute load average during the block."
    )
    for label in dict.fromkeys(r["db"] for r in rows):
        first = next(r for r in rows if r["db"] == label)
        print(
            f"\n{label}: {first['trips']:,} rating round trips in the run (page and htmx, warm-up included)"
            f" over {len(first['workers'])} workers; worker RSS after the run: "
            + ", ".join(f"{w['end']:.0f} MB" for w in first["workers"])
        )
        print(
            f"  {'worker':>8} {'start MB':>8} {'1st request MB':>14} {'end MB':>7} {'rating requests':>15}"
            f" {'bare':>6} {'other':>6}"
        )
        for w in first["workers"]:
            served = w["served"]
            print(
                f"  {w['pid']:>8} {w.get('start', 0):>8.1f} {w.get('first_request', 0):>14.1f} {w['end']:>7.1f}"
                f" {served.get('rating', 0):>15,} {served.get('bare', 0):>6,} {served.get('other', 0):>6,}"
            )
    print(
        "start = the worker once it has loaded the app; rating requests = next-item pages and submits"
        " (a page round trip is two, an htmx one is one), served by that worker."
    )
    for r in rows:
        for error in sorted(set(r["errors"]))[:5]:
            print(f"  {r['db']} {r['mode']} x{r['clients']} error: {error}")


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "--_count":
        count_queries(study="study" in sys.argv[2:])
    else:
        main()
