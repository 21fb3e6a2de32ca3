"""Offline annotation import and CSV export: a file of N items × K annotators through the upload's
code path, then the batch's annotations.csv and scores.csv exports of what was imported.

    .venv/bin/python bench/annotation_import_bench.py [--items 10000] [--annotators 3] [--databases sqlite,postgresql]
    .venv/bin/python bench/annotation_import_bench.py --databases sqlite --profile   # and print where the time goes
    .venv/bin/python bench/annotation_import_bench.py --steps   # and a table of seconds per step

Each database runs in a fresh child process on a fresh database (SQLite file under /tmp;
PostgreSQL database ``annotation_import_bench``, dropped and re-created). The child calls
``annotations_import_file`` (parse, check against the database, one transaction), the function
the upload page's confirm step and ``manage.py import_annotations`` call, for a batch that does
not exist yet (items, users, annotations, scores and assignments are all created). Printed:
annotation rows, score rows, seconds, rows/s, peak RSS and the SQL statements the import ran
(the count does not grow with the file, except for the fixed-size chunks on SQLite); then the
seconds to produce annotations.csv and scores.csv for the batch (the report page's download links).
With ``--steps``, timers around the import's own functions (reading and checking the file, the
users, each id reservation and each table's COPY or insert, COMMIT with its deferred checks, and
the work run after the commit) print a second table; what they leave out is "other". After the
import the child runs what it queued for the background worker (ANALYZE on PostgreSQL), outside the
timed import, as a worker would, and the table gives those seconds on their own line.
Not part of the test suite.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from annotator_http import fresh_database as fresh_database_at

PG_URL = "postgres://postgres@127.0.0.1:5432/annotation_import_bench"
SQLITE_PATH = Path("/tmp/annotation_import_bench.sqlite3")
DIMENSIONS = ("coherence", "relevance", "instruction_following", "safety_compliance", "fluency")
FLAGS = ("ignores_hard_constraint", "major_factual_impossibility", "unsafe_suggestion", "partial_compliance")


def generate(path: Path, items: int, annotators: int, seed: int = 11) -> None:
    """The guideline's CSV template: one row per item and annotator, every score in range, no flags."""
    rng = random.Random(seed)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            ["item_id", "system_id", "prompt", "response", "annotator", *DIMENSIONS, *FLAGS, "comment"]
        )
        for i in range(items):
            prompt = f"Request {i // 2}: plan a route to the depot avoiding tolls."
            response = f"Route {i}: head north on Main St, then Route {rng.randint(1, 99)} east; no tolls."
            for a in range(annotators):
                scores = [rng.randint(3, 5) for _ in DIMENSIONS]
                writer.writerow(
                    [
                        f"item-{i:06d}",
                        f"sys-{i % 2}",
                        prompt,
                        response,
                        f"rater{a:02d}",
                        *scores,
                        0,
                        0,
                        0,
                        0,
                        "fine" if rng.random() < 0.3 else "",
                    ]
                )


class StepTimer:
    """Wall seconds per step of the import, and the PostgreSQL backend's CPU seconds in it, from
    timers wrapped around the import's functions for one run."""

    def __init__(self, connection) -> None:
        self.connection = connection
        self.seconds: dict[str, float] = {}
        self.server: dict[str, float] = {}

    def wrap(self, owner, attribute: str, name) -> None:
        """Time ``owner.attribute``; ``name(*args, **kwargs)`` names the step of one call."""
        original = getattr(owner, attribute)

        def timed(*args, **kwargs):
            server_start, start = server_cpu(self.connection), time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                step = name(*args, **kwargs)
                self.seconds[step] = self.seconds.get(step, 0.0) + time.perf_counter() - start
                if server_start is not None:
                    self.server[step] = (
                        self.server.get(step, 0.0) + server_cpu(self.connection) - server_start
                    )

        setattr(owner, attribute, timed)

    def install(self) -> None:
        from django.db import connections

        from annotator.uploads.services import annotation_imports as imports

        def model(**kwargs):
            return kwargs["model"]._meta.model_name

        self.wrap(imports, "annotation_import_plan", lambda **_: "read and check the file")
        self.wrap(imports, "_users", lambda *_: "users")
        self.wrap(imports, "ids_reserve", lambda **kw: f"ids: {model(**kw)}")
        self.wrap(imports, "items_insert", lambda **_: "write: item")
        self.wrap(imports, "rows_insert", lambda **kw: f"write: {model(**kw)}")
        self.wrap(imports, "_count_annotations", lambda *_: "item counts")
        connection = connections["default"]
        self.wrap(connection, "_commit", lambda: "COMMIT (deferred checks)")
        self.wrap(connection, "run_and_clear_commit_hooks", lambda: "after the commit (on_commit)")


def child(file: Path, profile: bool, steps: bool) -> None:
    import resource

    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from annotator.models import Annotation, Score
    from annotator.uploads.services.annotation_imports import annotations_import_file

    data = file.read_bytes()
    import cProfile
    import pstats

    profiler = None
    if profile:
        profiler = cProfile.Profile()
        profiler.enable()
    timer = StepTimer(connection) if steps else None
    if timer is not None:
        timer.install()
    server_start = server_cpu(connection)
    start, cpu_start = time.perf_counter(), time.process_time()
    with CaptureQueriesContext(connection) as queries:
        annotations_import_file(data=data, filename=file.name, batch_name="offline", k=3)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    server = server_cpu(connection) - server_start if server_start is not None else None
    if profiler is not None:
        profiler.disable()
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(40)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    # What the upload queued for the background worker (ANALYZE on PostgreSQL) runs here, as a worker
    # would right after it, so the exports below are planned with statistics; not part of "s".
    worker_start = time.perf_counter()
    call_command("db_worker", "--batch", "--interval", "0", "--no-startup-delay", verbosity=0)
    worker_seconds = time.perf_counter() - worker_start
    from annotator.models import Batch
    from annotator.reports.exports import csv_tables as report_csv

    batch = Batch.objects.get(name="offline")
    exports = {}
    for name in ("annotations_csv", "scores_csv"):
        profiler = cProfile.Profile() if profile else None
        export_start, export_cpu = time.perf_counter(), time.process_time()
        if profiler:
            profiler.enable()
        size = sum(len(line) for line in getattr(report_csv, name)(batch=batch))
        exports[name] = time.perf_counter() - export_start
        exports[name + "_cpu"] = time.process_time() - export_cpu
        if profiler:
            profiler.disable()
            pstats.Stats(profiler, stream=sys.stderr).sort_stats("tottime").print_stats(15)
        exports[name + "_mb"] = size / 2**20
    print(
        json.dumps(
            {
                "annotations": Annotation.objects.count(),
                "scores": Score.objects.count(),
                "seconds": seconds,
                "cpu": cpu,
                "server_cpu": server,
                "load": os.getloadavg()[0],
                "rss_mb": rss_mb,
                "queries": len(queries.captured_queries),
                "worker": worker_seconds,
                "steps": timer.seconds if timer is not None else {},
                "steps_server_cpu": timer.server if timer is not None else {},
                **exports,
            }
        )
    )


def server_cpu(connection) -> float | None:
    """CPU seconds of this connection's PostgreSQL backend process so far (user + system), read from
    /proc when the server runs on this machine; None on SQLite (it runs in this process) or elsewhere."""
    if connection.vendor != "postgresql":
        return None
    connection.ensure_connection()
    try:
        stat = Path(f"/proc/{connection.connection.info.backend_pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def fresh_database(database: str, pg_url: str, sqlite_path: Path = SQLITE_PATH) -> str:
    return fresh_database_at(database, pg_url, sqlite_path)


def run(
    database: str,
    file: Path,
    profile: bool,
    pg_url: str = PG_URL,
    sqlite_path: Path = SQLITE_PATH,
    steps: bool = False,
) -> dict:
    env = dict(
        os.environ,
        DATABASE_URL=fresh_database(database, pg_url, sqlite_path),
        DJANGO_SETTINGS_MODULE="annotator.settings",
        SECRET_KEY="bench-only-not-secret",
        DEBUG="0",
    )
    command = [
        sys.executable,
        __file__,
        "--child",
        str(file),
        *(["--profile"] if profile else []),
        *(["--steps"] if steps else []),
    ]
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise SystemExit(f"{database} run failed:\n{result.stderr}")
    if profile:
        print(result.stderr)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--annotators", type=int, default=3)
    parser.add_argument("--databases", default="sqlite,postgresql")
    parser.add_argument("--repeat", type=int, default=1, help="runs per database; the median is printed")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of the import (slower)")
    parser.add_argument("--pg-url", default=PG_URL, help="PostgreSQL database to drop and re-create")
    parser.add_argument(
        "--sqlite-path", type=Path, default=SQLITE_PATH, help="SQLite file to delete and re-create"
    )
    parser.add_argument("--steps", action="store_true", help="also print seconds per step of the import")
    parser.add_argument("--json", action="store_true", help="also print each run as a JSON line")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        sys.path.insert(0, str(ROOT))
        child(Path(args.child), args.profile, args.steps)
        return
    file = Path(f"/tmp/annotation_import_bench_{args.items}x{args.annotators}.csv")
    if not file.exists():
        generate(file, args.items, args.annotators)
    print(
        f"file: {file} ({file.stat().st_size / 2**20:.1f} MB, {args.items} items × {args.annotators} annotators)"
    )
    print(
        f"rows = annotation rows of the file; s = wall seconds; cpu = this process's CPU seconds, db cpu = the"
        f" PostgreSQL backend's (SQLite runs inside this process); rows/cpu-s = rows / (cpu + db cpu); median of"
        f" {args.repeat} by wall time, the databases interleaved; load = 1-minute load average after the import\n"
    )
    print(
        f"{'database':<11} {'annotations':>11} {'scores':>7} {'s':>6} {'cpu':>5} {'db cpu':>6} {'rows/s':>7}"
        f" {'rows/cpu-s':>10} {'SQL':>4} {'RSS MB':>6} {'annotations.csv s / cpu':>23} {'scores.csv s / cpu':>18}"
        f" {'load':>5}"
    )
    databases = [d.strip() for d in args.databases.split(",")]
    runs: dict[str, list[dict]] = {d: [] for d in databases}
    for _ in range(args.repeat):  # interleaved, so a burst of load on the machine hits both databases
        for database in databases:
            runs[database].append(
                run(database, file, args.profile, args.pg_url, args.sqlite_path, args.steps)
            )
            if args.json:
                print(json.dumps({"database": database, **runs[database][-1]}))
    for database in databases:
        r = sorted(runs[database], key=lambda r: r["seconds"])[len(runs[database]) // 2]
        db_cpu = r["server_cpu"] or 0.0
        print(
            f"{database:<11} {r['annotations']:>11} {r['scores']:>7} {r['seconds']:>6.2f} {r['cpu']:>5.2f}"
            f" {db_cpu:>6.2f} {r['annotations'] / r['seconds']:>7.0f} {r['annotations'] / (r['cpu'] + db_cpu):>10.0f}"
            f" {r['queries']:>4} {r['rss_mb']:>6.0f} {r['annotations_csv']:>16.2f} / {r['annotations_csv_cpu']:<4.2f}"
            f" {r['scores_csv']:>11.2f} / {r['scores_csv_cpu']:<4.2f} {r['load']:>5.1f}"
        )
    if args.steps:
        print_steps(databases, runs)


def print_steps(databases: list[str], runs: dict[str, list[dict]]) -> None:
    """Seconds per step, the median of each step over the runs (so the column need not add up to
    the median wall time); "other" is the run's wall time not inside any timed step. On PostgreSQL a
    second column gives the backend's CPU seconds in the step (10 ms resolution)."""
    print("\nseconds per step of the import (median over the runs of each step on its own; wall / db cpu)\n")
    names: list[str] = []
    for database in databases:
        for r in runs[database]:
            names += [name for name in r["steps"] if name not in names]
    print(f"{'step':<32}" + "".join(f" {database:>15}" for database in databases))
    for name in [*names, "other", "wall"]:
        cells = []
        for database in databases:
            wall = _median(step_seconds(r, name, "steps") for r in runs[database])
            server = [
                step_seconds(r, name, "steps_server_cpu")
                for r in runs[database]
                if r["server_cpu"] is not None
            ]
            cells.append(f" {wall:>7.3f} / {_median(server):.2f}" if server else f" {wall:>7.3f}       ")
        print(f"{name:<32}" + "".join(cells))
    worker = [f" {_median(r['worker'] for r in runs[database]):>7.3f}       " for database in databases]
    print(f"{'worker, after (not in wall)':<32}" + "".join(worker))


def _median(values) -> float:
    values = sorted(values)
    return values[len(values) // 2]


def step_seconds(r: dict, name: str, key: str) -> float:
    total = r["seconds"] if key == "steps" else r["server_cpu"]
    if name == "wall":
        return total
    if name == "other":
        return total - sum(r[key].values())
    return r[key].get(name, 0.0)


if __name__ == "__main__":
    main()
