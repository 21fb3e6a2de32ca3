"""Streams on PostgreSQL: traces per second through the HTTP API, and the time to read a stream's
calibration series (API and page) at 10⁶ traces and 20,000 human labels.

``python bench/stream_ingest_bench.py [--url postgres://postgres@127.0.0.1:5432/bench_streams] [--api-traces 100000]
[--traces 1000000] [--labels 20000] [--port 8760]`` recreates the database, makes a stream, then:

1. pushes ``--api-traces`` traces in requests of 1,000 to gunicorn (2 workers) on ``--port``, from 1 and
   from 2 client threads, each trace with one judge score, timestamps spread over 60 days;
2. fills the stream up to ``--traces`` traces with the same service in-process (no HTTP: only the
   read-side figures depend on it), and imports ``--labels`` human labels (3 per sampled trace);
3. waits for the background worker's refresh of the series, then reads
   ``GET /api/v1/streams/{name}/calibration``: first, cold (its stored windows deleted: more than a read
   computes, so they are served marked stale), the worker's refresh that computes them (run in-process),
   warm (stored windows read), after one new trace (one window
   computed in the request, before the worker gets to it), and the stream page warm and after a change.

Prints one table per part.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
NAME = "bench-stream"
DAYS = 60
START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def _fresh_postgres(url: str) -> None:
    import psycopg

    name = url.rsplit("/", 1)[1]
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def django_on(url: str, **env: str) -> None:
    """Django set up in this process on ``url``, migrated, with the API's rate limit out of the way."""
    os.environ.update(
        DATABASE_URL=url,
        DJANGO_SETTINGS_MODULE="annotator.settings",
        SECRET_KEY="bench-only",
        HTTPS_ONLY="0",
        ALLOWED_HOSTS="testserver",
        ANNOTATOR_API_RATE="1000000/min",
        **env,
    )
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def traces(first: int, count: int, total: int, prefix: str = "req") -> list[dict]:
    """Traces ``first`` .. ``first + count − 1`` of ``total``, spread evenly over DAYS days."""
    out = []
    for n in range(first, first + count):
        when = START + dt.timedelta(seconds=n * DAYS * 86400 / total)
        out.append(
            {
                "trace_id": f"{prefix}-{n:08d}",
                "timestamp": when.isoformat(),
                "prompt": f"Customer question number {n}: how do I reset my password?",
                "response": f"Open Settings, choose Security, then Reset password ({n}).",
                "system_id": "assistant-v3",
                "metadata": {"region": "eu" if n % 3 else "us"},
                "judge_scores": [{"judge": "gpt-judge", "dimension": "coherence", "value": 1 + n % 5}],
            }
        )
    return out


def _env(url: str) -> dict:
    return {
        **os.environ,
        "DATABASE_URL": url,
        "SECRET_KEY": "bench-only",
        "HTTPS_ONLY": "0",
        "ALLOWED_HOSTS": "127.0.0.1",
        "ANNOTATOR_API_RATE": "1000000/min",
        "DJANGO_SETTINGS_MODULE": "annotator.settings",
    }


def _worker(url: str) -> subprocess.Popen:
    """The background worker, as in production: it runs the ANALYZE the ingest queues as the table grows."""
    return subprocess.Popen(
        [sys.executable, "manage.py", "db_worker", "--queue-name", "default"], cwd=ROOT, env=_env(url)
    )


def _server(url: str, port: int) -> subprocess.Popen:
    env = _env(url)
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "annotator.wsgi",
            "-b",
            f"127.0.0.1:{port}",
            "-w",
            "2",
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
    )
    import httpx

    for _ in range(100):
        try:
            httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
            return server
        except httpx.HTTPError:
            time.sleep(0.2)
    server.kill()
    raise SystemExit("gunicorn did not start")


def push_over_http(
    port: int, key: str, first: int, count: int, total: int, clients: int
) -> tuple[float, list[float]]:
    import httpx

    chunks = [(s, min(1000, first + count - s)) for s in range(first, first + count, 1000)]
    bodies = [json.dumps({"traces": traces(s, n, total)}).encode() for s, n in chunks]  # built before timing
    times: list[float] = []
    lock = threading.Lock()

    def work(mine):
        with httpx.Client(
            headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        ) as http:
            for body in mine:
                t0 = time.perf_counter()
                r = http.post(
                    f"http://127.0.0.1:{port}/api/v1/streams/{NAME}/traces", content=body, timeout=60
                )
                assert r.status_code == 200 and r.json()["accepted"] == 1000, r.text[:300]
                with lock:
                    times.append(time.perf_counter() - t0)

    threads = [threading.Thread(target=work, args=(bodies[i::clients],)) for i in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - started, times


def _worker_idle(name: str, timeout_s: float = 900) -> float:
    """Seconds until no refresh of the stream is queued or running."""
    from django_tasks.base import TaskResultStatus
    from django_tasks_db.models import DBTaskResult

    from annotator.models import Stream

    started = time.perf_counter()
    while time.perf_counter() - started < timeout_s:
        pending = DBTaskResult.objects.filter(
            status__in=[TaskResultStatus.READY, TaskResultStatus.RUNNING],
            task_path__endswith="stream_series_refresh",
        ).exists()
        if not pending and not Stream.objects.get(name=name).series_refresh_queued:
            return time.perf_counter() - started
        time.sleep(1)
    raise SystemExit("the worker did not finish the series refresh")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="postgres://postgres@127.0.0.1:5432/bench_streams")
    parser.add_argument("--api-traces", type=int, default=100_000)
    parser.add_argument("--traces", type=int, default=1_000_000)
    parser.add_argument("--labels", type=int, default=20_000)
    parser.add_argument("--port", type=int, default=8760)
    args = parser.parse_args()
    _fresh_postgres(args.url)
    django_on(args.url)
    from django.contrib.auth import get_user_model
    from django.test import Client

    from annotator.models import Stream, Trace
    from annotator.services.api_tokens import api_token_create
    from annotator.streams.services.annotations import stream_annotations_import
    from annotator.streams.services.ingest import traces_ingest
    from annotator.streams.services.streams import stream_create

    researcher = get_user_model().objects.create_user("bench-researcher", is_staff=True)
    key = api_token_create(user=researcher, name="bench", days=1)[1]
    sampled_share = args.labels / 3 / args.traces  # 3 labels per sampled trace
    stream = stream_create(
        name=NAME, human_rate=sampled_share, k=3, window="day", judges=["gpt-judge"], created_by=researcher
    )

    # 1. Through the HTTP API.
    worker = _worker(args.url)
    server = _server(args.url, args.port)
    rows = []
    try:
        done = 0
        for clients in (1, 2):
            count = args.api_traces // 2
            seconds, times = push_over_http(args.port, key, done, count, args.traces, clients)
            done += count
            rows.append(
                (clients, count, seconds, count / seconds, statistics.median(times) * 1000, max(times) * 1000)
            )
    finally:
        server.terminate()
        server.wait()
    # 2. The rest in-process, then the labels.
    t0 = time.perf_counter()
    for first in range(done, args.traces, 1000):
        traces_ingest(stream=stream, traces=traces(first, min(1000, args.traces - first), args.traces))
    fill = time.perf_counter() - t0
    # 1b. The API again, on the full table (the traces after the last go on past the last day).
    time.sleep(5)  # the worker's ANALYZE of the last doubling
    server = _server(args.url, args.port)
    try:
        count = args.api_traces // 5
        seconds, times = push_over_http(args.port, key, args.traces, count, args.traces, 2)
        rows.append((2, count, seconds, count / seconds, statistics.median(times) * 1000, max(times) * 1000))
    finally:
        server.terminate()
        server.wait()
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    print(
        "\nIngest through the HTTP API (gunicorn, 2 workers, PostgreSQL; requests of 1,000 traces; "
        f"load average now {load} on {os.cpu_count()} CPUs)\n"
    )
    print(
        "| client threads | traces already stored | traces sent | seconds | traces/s | p50 request ms | max request ms |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    before = [0, args.api_traces // 2, args.traces]
    for (c, n, sec, rate, p50, worst), stored in zip(rows, before, strict=True):
        print(f"| {c} | {stored:,} | {n:,} | {sec:.1f} | {rate:,.0f} | {p50:.0f} | {worst:.0f} |")
    sampled = list(Trace.objects.filter(stream=stream, sampled=True).values_list("trace_id", flat=True))
    rng = random.Random(1)
    labels = [
        {
            "trace_id": t,
            "annotator": f"person-{a}",
            "scores": {"coherence": max(1, min(5, 1 + int(t[4:]) % 5 + rng.choice((-1, 0, 0, 1))))},
        }
        for t in sampled
        for a in range(3)
    ]
    t0 = time.perf_counter()
    stream_annotations_import(stream=stream, labels=labels, created_by=researcher)
    label_s = time.perf_counter() - t0
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    n_traces = Trace.objects.filter(stream=stream).count()
    print(
        f"\nFilled in-process: {n_traces:,} traces ({fill:.0f} s), {len(labels):,} human labels on {len(sampled):,} sampled traces ({label_s:.0f} s)\n"
    )

    # 3. Reading the series.
    client = Client(headers={"Authorization": f"Bearer {key}"})
    page = Client()
    page.force_login(researcher)
    url = f"/api/v1/streams/{NAME}/calibration?judge=gpt-judge&dimension=coherence"

    def timed(what, fn, repeat=1):
        ms = []
        for _ in range(repeat):
            t = time.perf_counter()
            response = fn()
            ms.append((time.perf_counter() - t) * 1000)
            assert response.status_code == 200, response.content[:300]
        return what, statistics.median(ms), max(ms)

    # The worker computes the series after the traces arrive (STREAM_SERIES_REFRESH_DELAY_S later).
    waited = _worker_idle(NAME)
    # This process's first statistics would otherwise pay for importing scipy, krippendorff and the
    # rest (once per server process), not for reading the series.
    import annotator.streams.series  # noqa: F401
    from hcs.calibration.alt_test import alt_test  # noqa: F401
    from hcs.ppi import ppi_mean  # noqa: F401

    client.get(f"/api/v1/streams/{NAME}")
    results = [
        timed(f"API, first read after the worker's refresh ({waited:.0f} s wait)", lambda: client.get(url))
    ]
    windows = client.get(url).json()["windows"]
    from annotator.models import StreamWindowStat

    StreamWindowStat.objects.filter(stream__name=NAME, judge="gpt-judge", dimension="coherence").delete()
    results.append(
        timed(
            "API, cold (stored windows deleted): served marked stale, the worker computes them",
            lambda: client.get(url),
        )
    )
    from annotator.streams.services.series import series_refresh_all

    # What the worker then does (every series of the stream and its alerts), here so the reads below
    # find the windows stored.
    t = time.perf_counter()
    series_refresh_all(stream_id=Stream.objects.get(name=NAME).pk)
    refresh_ms = (time.perf_counter() - t) * 1000
    results.append(
        ("the worker's refresh after that (in-process): the deleted windows computed", refresh_ms, refresh_ms)
    )
    results.append(timed("API, warm: stored windows read", lambda: client.get(url), repeat=5))
    results.append(
        timed(
            "page (two SVG charts), warm",
            lambda: page.get(f"/streams/{NAME}/?judge=gpt-judge&dimension=coherence"),
            repeat=5,
        )
    )
    late = {
        **traces(0, 1, args.traces)[0],
        "trace_id": "late-backfill-1",  # a new id: a stored one would be a duplicate and change nothing
        "timestamp": (START + dt.timedelta(days=30, hours=1)).isoformat(),
    }
    assert traces_ingest(stream=Stream.objects.get(name=NAME), traces=[late]).accepted == 1
    results.append(timed("API after one new trace (one window computed)", lambda: client.get(url)))
    late = {**late, "trace_id": "late-backfill-2", "timestamp": (START + dt.timedelta(days=20)).isoformat()}
    assert traces_ingest(stream=Stream.objects.get(name=NAME), traces=[late]).accepted == 1
    results.append(
        timed(
            "page after one more new trace (one window computed)",
            lambda: page.get(f"/streams/{NAME}/?judge=gpt-judge&dimension=coherence"),
        )
    )
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    print(
        f"Reading the series: {len(windows)} daily windows, {n_traces:,} traces, {len(labels):,} human labels "
        f"(load average now {load} on {os.cpu_count()} CPUs)\n"
    )
    print("| request | median ms | max ms |")
    print("|---|---:|---:|")
    for what, median, worst in results:
        print(f"| {what} | {median:.0f} | {worst:.0f} |")
    worker.terminate()
    worker.wait()


if __name__ == "__main__":
    main()
