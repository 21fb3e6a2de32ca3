"""CSV export benchmark: annotations.csv and scores.csv of 10,000 items × 3 annotators, before and after.

    .venv/bin/python bench/export_bench.py [--before DIR] [--repeat 3] [--databases sqlite,postgresql]
        [--ways function,page] [--items 10000] [--annotators 3] [--keep] [--profile]
        [--pg-url postgres://postgres@127.0.0.1:5432/export_bench]

The batch is the one ``annotation_import_bench.py`` imports (its generated file, through
``annotations_import_file``), loaded once per database in a child process: SQLite in a file under
/tmp, PostgreSQL in the database named by --pg-url (dropped and re-created). Then each export is
built in a fresh child process per run, way and code version, the text consumed chunk by chunk
as a streaming response consumes it. ``--before DIR`` names a checkout of the older code
(``git worktree add --detach /tmp/export-before main``): its exports run in the same children against the
same database, interleaved with this checkout's, and the bench checks both wrote the same bytes.

Each export is timed two ways: "function" calls ``export_chunks`` (the background job and
``export_report``), "page" fetches the report page's download link through Django's handler and
middleware with the test client and reads the streamed response (no network). Printed per export,
way, database and code: data rows, median wall and CPU seconds of the child (and, on PostgreSQL,
of the server backend, read from /proc) over --repeat runs; chunks yielded and the child's peak RSS
growth while exporting (the exports stream). Target: ≤ 1.5 s wall each. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from annotation_import_bench import generate, server_cpu  # noqa: E402
from annotator_http import fresh_database as fresh_database_at  # noqa: E402

PG_URL = "postgres://postgres@127.0.0.1:5432/export_bench"
SQLITE_PATH = Path("/tmp/export_bench.sqlite3")
BATCH = "export-bench"
EXPORTS = ("annotations.csv", "scores.csv")


def _django(code: Path) -> None:
    sys.path.insert(0, str(code))
    import django

    django.setup()


def load(file: Path, code: Path) -> None:
    """Child: migrate and import the file as batch BATCH."""
    _django(code)
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from annotator.uploads.services.annotation_imports import annotations_import_file

    annotations_import_file(data=file.read_bytes(), filename=file.name, batch_name=BATCH, k=3)
    # What the import queued for the background worker (ANALYZE on PostgreSQL) runs here, as a worker
    # would right after it: without statistics PostgreSQL plans the exports for empty tables (~10x slower).
    call_command("db_worker", "--batch", "--interval", "0", "--no-startup-delay", verbosity=0)


def export(code: Path, key: str, way: str, profile: bool) -> None:
    """Child: build one export of batch BATCH and print its figures as JSON. ``way``: "function"
    (``export_chunks``, as the background job and ``export_report`` call it) or "page" (the report
    page's download link through Django's handler and middleware, by the test client, streamed)."""
    _django(code)
    from django.db import connection

    from annotator.models import Batch
    from annotator.reports.exports.formats import EXPORT_FORMATS, export_chunks

    batch = Batch.objects.get(name=BATCH)
    if way == "page":
        from django.contrib.auth.models import Group, User
        from django.test import Client

        user, _ = User.objects.get_or_create(username="export-bench-researcher")
        user.groups.add(Group.objects.get_or_create(name="researcher")[0])
        client = Client()
        client.force_login(user)
        # A first request imports the URLconf and every view, as a server's worker has long done.
        assert client.get(f"/reports/{batch.pk}/export/unknown").status_code == 404

        def text():
            response = client.get(f"/reports/{batch.pk}/export/{key}")
            assert response.status_code == 200, response.status_code
            return (chunk.decode() for chunk in response.streaming_content)
    else:

        def text():
            return export_chunks(EXPORT_FORMATS[key], batch=batch)

    connection.ensure_connection()
    digest, size, chunks, records = hashlib.sha256(), 0, 0, 0
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    server_start = server_cpu(connection)
    start, cpu_start = time.perf_counter(), time.process_time()
    if profiler:
        profiler.enable()
    for chunk in text():
        chunks += 1
        size += len(chunk)
        records += chunk.count("\r\n")  # the bench's text has no line breaks inside cells
        digest.update(chunk.encode())
    if profiler:
        profiler.disable()
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    server = server_cpu(connection) - server_start if server_start is not None else None
    if profiler:
        import pstats

        pstats.Stats(profiler, stream=sys.stderr).sort_stats("tottime").print_stats(20)
    print(
        json.dumps(
            {
                "wall": wall,
                "cpu": cpu,
                "server_cpu": server,
                "rows": records - 1,
                "chunks": chunks,
                "chars": size,
                "sha256": digest.hexdigest(),
                "rss_growth_mb": (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024,
            }
        )
    )


def _env(url: str) -> dict[str, str]:
    return dict(
        os.environ,
        DATABASE_URL=url,
        DJANGO_SETTINGS_MODULE="annotator.settings",
        SECRET_KEY="bench-only-not-secret",
        DEBUG="0",
        HTTPS_ONLY="0",
        ALLOWED_HOSTS="testserver",
    )


def _child(args: list[str], code: Path, url: str, profile: bool = False) -> dict | None:
    command = [sys.executable, __file__, *args, "--code", str(code), *(["--profile"] if profile else [])]
    result = subprocess.run(command, cwd=code, env=_env(url), capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{result.stderr}")
    if profile:
        print(result.stderr, file=sys.stderr)
    lines = result.stdout.strip().splitlines()
    return json.loads(lines[-1]) if lines else None


def fresh_database(database: str, pg_url: str) -> str:
    return fresh_database_at(database, pg_url, SQLITE_PATH)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--annotators", type=int, default=3)
    parser.add_argument("--databases", default="sqlite,postgresql")
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs per export, database and code; medians printed"
    )
    parser.add_argument("--before", type=Path, help="a checkout of the older code to compare with")
    parser.add_argument("--pg-url", default=PG_URL, help="PostgreSQL database to drop and re-create")
    parser.add_argument("--keep", action="store_true", help="reuse the databases a previous run loaded")
    parser.add_argument(
        "--ways",
        default="function,page",
        help="function: export_chunks; page: the download link through Django (test client)",
    )
    parser.add_argument("--profile", action="store_true", help="print a cProfile of each export (slower)")
    parser.add_argument("--load", help=argparse.SUPPRESS)
    parser.add_argument("--export", help=argparse.SUPPRESS)
    parser.add_argument("--way", default="function", help=argparse.SUPPRESS)
    parser.add_argument("--code", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.load:
        load(Path(args.load), args.code)
        return
    if args.export:
        export(args.code, args.export, args.way, args.profile)
        return

    file = Path(f"/tmp/annotation_import_bench_{args.items}x{args.annotators}.csv")
    if not file.exists():
        generate(file, args.items, args.annotators)
    databases = [d.strip() for d in args.databases.split(",")]
    urls = {}
    for database in databases:
        if args.keep:
            urls[database] = f"sqlite:///{SQLITE_PATH}" if database == "sqlite" else args.pg_url
        else:
            urls[database] = fresh_database(database, args.pg_url)
            _child(["--load", str(file)], ROOT, urls[database])
    codes = {"before": args.before.resolve(), "after": ROOT} if args.before else {"after": ROOT}
    ways = [w.strip() for w in args.ways.split(",")]
    runs: dict[tuple[str, str, str, str], list[dict]] = {}
    for _ in range(args.repeat):  # interleaved: a burst of load on the machine hits every variant
        for database in databases:
            for key in EXPORTS:
                for way in ways:
                    for name, code in codes.items():
                        result = _child(["--export", key, "--way", way], code, urls[database], args.profile)
                        runs.setdefault((key, way, database, name), []).append(result)

    print(
        f"{args.items:,} items × {args.annotators} annotators; medians of {args.repeat} runs, interleaved;"
        f" load average {os.getloadavg()[0]:.1f} at the end"
    )
    print(
        "function: export_chunks (the job and export_report); page: the download link through Django's handler"
        " (test client, streamed). wall s / CPU s: building and consuming every chunk; db CPU s: the PostgreSQL"
        " backend's; RSS: this process's peak growth meanwhile\n"
    )
    print(
        "| export | through | database | code | rows | wall s | CPU s | db CPU s | chunks | RSS MB | same bytes |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for key in EXPORTS:
        for way in ways:
            for database in databases:
                for name in codes:
                    results = runs[(key, way, database, name)]
                    hashes = {r["sha256"] for r in results}
                    before = (
                        {r["sha256"] for r in runs[(key, way, database, "before")]} if args.before else None
                    )
                    same = "–" if before is None else "yes" if hashes == before and len(hashes) == 1 else "NO"
                    db_cpu = [r["server_cpu"] for r in results if r["server_cpu"] is not None]
                    print(
                        f"| {key} | {way} | {database} | {name} | {results[0]['rows']:,}"
                        f" | {statistics.median(r['wall'] for r in results):.2f}"
                        f" | {statistics.median(r['cpu'] for r in results):.2f}"
                        f" | {f'{statistics.median(db_cpu):.2f}' if db_cpu else '–'}"
                        f" | {results[0]['chunks']:,}"
                        f" | {statistics.median(r['rss_growth_mb'] for r in results):.0f} | {same} |"
                    )


if __name__ == "__main__":
    main()
