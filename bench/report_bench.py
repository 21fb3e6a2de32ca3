"""Report benchmark: 40,000 items × 5 annotators × 5 dimensions (1,000,000 scores).

    .venv/bin/python bench/report_bench.py [--items 40000] [--databases sqlite,postgresql] [--repeat 3]
        [--pg-url postgres://postgres@127.0.0.1:5432/reports_bench] [--sqlite-path /tmp/reports_bench.sqlite3]

Each database is loaded once in a child process (PostgreSQL: the database named by --pg-url, dropped
and re-created, rows sent with COPY; SQLite: a file under /tmp, executemany in one transaction).
Then, each in a fresh child process so peak RSS is its own:

- floor: the bare grouped SQL query (counts per item × dimension × score), the count matrices,
  and the library calls on them (statsmodels Fleiss' κ, krippendorff α ordinal and interval,
  irrCAC AC2) — what any report must at least do;
- report: ``batch_report`` exactly as the page and ``export_report`` run it, bootstrap on
  (1,000 resamples), and the same with bootstrap off.

Printed: best and median wall seconds and median CPU seconds over --repeat interleaved runs, peak RSS,
and report / floor. Targets: report ≤ 1.3 × floor in CPU time and ≤ 5 s with bootstrap on; peak RSS
≤ 500 MB. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from itertools import chain
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PG_URL = "postgres://postgres@127.0.0.1:5432/reports_bench"
SQLITE_PATH = Path("/tmp/reports_bench.sqlite3")
BATCH = "report-bench"
N_ANNOTATORS = 5
SYSTEMS = ("navigator-v2", "navigator-v1", "baseline-chat", "baseline-rules")


def _setup_django(url: str) -> None:
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DEBUG", "1")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotator.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# ------------------------------------------------------------------ loading
def _rows_for(model, fixed: dict, varying: list[str]):
    """Column names in table order, and a function turning the varying values into a full row."""
    from django.db import connection

    fields = list(model._meta.concrete_fields)
    consts = {}
    for f in fields:
        if f.attname in varying:
            continue
        value = fixed[f.attname] if f.attname in fixed else f.get_default()
        if f.get_internal_type() == "JSONField":
            consts[f.attname] = json.dumps(value)
        elif hasattr(value, "isoformat") and connection.vendor == "sqlite":
            consts[f.attname] = connection.ops.adapt_datetimefield_value(value)
        else:
            consts[f.attname] = value
    columns = [f.column for f in fields]
    order = [
        (f.attname in varying, varying.index(f.attname) if f.attname in varying else f.attname)
        for f in fields
    ]

    def make(values):
        return tuple(values[i] if is_var else consts[i] for is_var, i in order)

    return columns, make


def _insert(model, columns, rows) -> None:
    from django.db import connection

    table = model._meta.db_table
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            raw = cursor.cursor
            with raw.copy(f'COPY "{table}" ({", ".join(columns)}) FROM STDIN') as copy:
                # COPY text format written in large blocks (values here hold no tabs or newlines).
                block = []
                for row in rows:
                    block.append("\t".join("\\N" if v is None else str(v) for v in row))
                    if len(block) >= 100_000:
                        copy.write("\n".join(block) + "\n")
                        block = []
                if block:
                    copy.write("\n".join(block) + "\n")
            cursor.execute(
                f"SELECT setval(pg_get_serial_sequence('\"{table}\"', 'id'), (SELECT MAX(id) FROM \"{table}\"))"
            )
    else:
        marks = ", ".join(["%s"] * len(columns))
        with connection.cursor() as cursor:
            cursor.executemany(f'INSERT INTO "{table}" ({", ".join(columns)}) VALUES ({marks})', rows)


def load(url: str, n_items: int, seed: int = 11) -> None:
    _setup_django(url)
    import numpy as np
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection, transaction
    from django.utils import timezone

    from annotator.models import Annotation, Batch, Item, Score
    from hcs.rubric import Rubric

    t0 = time.perf_counter()
    call_command("migrate", verbosity=0)
    rubric = Rubric.default()
    dims = rubric.dimension_keys
    rng = np.random.default_rng(seed)
    now = timezone.now()
    with transaction.atomic():
        batch = Batch.objects.create(name=BATCH, rubric=rubric.to_dict(), k=N_ANNOTATORS)
        User = get_user_model()
        users = [User.objects.create_user(username=f"bench-annotator-{j}") for j in range(N_ANNOTATORS)]
        cols, make = _rows_for(
            Item,
            {"batch_id": batch.pk, "n_annotations": N_ANNOTATORS},
            ["id", "item_id", "position", "prompt", "response", "system_id", "prompt_id"],
        )
        _insert(
            Item,
            cols,
            (
                make(
                    (
                        i + 1,
                        f"item-{i:06d}",
                        i,
                        f"Plan a route to stop {i // len(SYSTEMS)} avoiding tolls.",
                        f"Response {i}: take Route {i % 97} and allow extra time.",
                        SYSTEMS[i % len(SYSTEMS)],
                        f"p{i // len(SYSTEMS)}",
                    )
                )
                for i in range(n_items)
            ),
        )
        cols, make = _rows_for(
            Annotation,
            {"submitted_at": now, "updated_at": now, "source": "import"},
            ["id", "item_id", "annotator_id"],
        )
        _insert(
            Annotation,
            cols,
            (
                make((i * N_ANNOTATORS + j + 1, i + 1, users[j].pk))
                for i in range(n_items)
                for j in range(N_ANNOTATORS)
            ),
        )
        # Scores pile up on 4–5 with item-level quality and some annotator noise.
        quality = rng.choice([2, 3, 4, 4, 5, 5], size=(n_items, len(dims)))
        noise = rng.choice([-1, 0, 0, 0, 1], size=(n_items, N_ANNOTATORS, len(dims)))
        values = np.clip(quality[:, None, :] + noise, 1, 5)
        cols, make = _rows_for(Score, {}, ["id", "annotation_id", "item_id", "dimension", "value"])

        def scores():
            sid = 0
            for i in range(n_items):
                for j in range(N_ANNOTATORS):
                    aid = i * N_ANNOTATORS + j + 1
                    for d, key in enumerate(dims):
                        sid += 1
                        yield make((sid, aid, i + 1, key, int(values[i, j, d])))

        _insert(Score, cols, scores())
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    print(
        f"  loaded {n_items:,} items, {n_items * N_ANNOTATORS * len(dims):,} scores "
        f"in {time.perf_counter() - t0:.1f} s",
        file=sys.stderr,
    )


# ------------------------------------------------------------------ measuring
def floor(url: str) -> dict:
    _setup_django(url)
    import numpy as np
    from django.db import connection

    from annotator.models import Batch, Item, Score
    from hcs.agreement import fleiss_kappa, gwet_ac2, krippendorff_alpha

    batch = Batch.objects.get(name=BATCH)
    rubric = batch.rubric_obj
    cats = list(rubric.levels)
    dims = rubric.dimension_keys
    case = "CASE s.dimension " + " ".join(f"WHEN %s THEN {i}" for i in range(len(dims))) + " END"
    sql = (
        f"SELECT s.item_id, {case} AS d, s.value, COUNT(*) FROM {Score._meta.db_table} s "
        f"JOIN {Item._meta.db_table} i ON i.id = s.item_id WHERE i.batch_id = %s "
        f"GROUP BY s.item_id, s.dimension, s.value"
    )
    fleiss_kappa(np.array([[1, 1], [2, 0]]))  # import the libraries outside the timing
    krippendorff_alpha(np.array([[1, 1], [2, 0]]), [1, 2], "ordinal")
    gwet_ac2(np.array([[1, 1], [2, 0], [0, 2]]), [1, 2])
    cpu = _cpu()
    start = time.perf_counter()
    chunks = []
    with connection.cursor() as cursor:  # read in chunks, straight into integer arrays
        cursor.execute(sql, [*dims, batch.pk])
        while fetched := cursor.fetchmany(50_000):
            chunks.append(np.fromiter(chain.from_iterable(fetched), dtype=np.int64, count=len(fetched) * 4))
    rows = np.concatenate(chunks).reshape(-1, 4)
    query_s = time.perf_counter() - start
    items, item_row = np.unique(rows[:, 0], return_inverse=True)
    counts = np.zeros((len(rubric.dimension_keys), len(items), len(cats)), dtype=np.int64)
    counts[rows[:, 1], item_row.ravel(), rows[:, 2] - rubric.scale_min] = rows[:, 3]
    for j in range(len(counts)):
        fleiss_kappa(counts[j])
        krippendorff_alpha(counts[j], cats, "ordinal")
        krippendorff_alpha(counts[j], cats, "interval")
        gwet_ac2(counts[j], cats)
    return {
        "seconds": time.perf_counter() - start,
        "cpu_s": _cpu() - cpu,
        "query_s": query_s,
        "peak_mb": _peak_mb(),
    }


def report(url: str, resamples: int) -> dict:
    _setup_django(url)
    import numpy as np

    from annotator.models import Batch
    from annotator.reports.selectors.batch_report import batch_report
    from hcs.agreement import fleiss_kappa, gwet_ac2, krippendorff_alpha

    fleiss_kappa(np.array([[1, 1], [2, 0]]))  # same warm-up as the floor
    krippendorff_alpha(np.array([[1, 1], [2, 0]]), [1, 2], "ordinal")
    gwet_ac2(np.array([[1, 1], [2, 0], [0, 2]]), [1, 2])
    batch = Batch.objects.get(name=BATCH)
    cpu = _cpu()
    start = time.perf_counter()
    result = batch_report(batch=batch, n_resamples=resamples)
    seconds = time.perf_counter() - start
    assert result.n_annotations == result.n_items * N_ANNOTATORS
    return {"seconds": seconds, "cpu_s": _cpu() - cpu, "peak_mb": _peak_mb()}


def _child(mode: str, url: str, *extra: str) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", mode, "--url", url, *extra],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"{mode} on {url} failed:\n{out.stderr}")
    if out.stderr.strip():
        print(out.stderr.strip(), file=sys.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _prepare_postgres(url: str) -> str:
    """Drop and re-create the database named by ``url`` (connecting to ``postgres`` on the same server)."""
    import psycopg
    from psycopg import sql

    base, name = url.rsplit("/", 1)
    with psycopg.connect(base.replace("postgres://", "postgresql://") + "/postgres", autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return url


def _prepare_sqlite(path: Path) -> str:
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    return f"sqlite:///{path}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=40_000)
    parser.add_argument("--databases", default="postgresql,sqlite")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child")
    parser.add_argument("--url")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--reuse", action="store_true", help="keep the databases loaded by an earlier run")
    parser.add_argument("--pg-url", default=PG_URL, help="PostgreSQL database to (re)create and measure")
    parser.add_argument("--sqlite-path", type=Path, default=SQLITE_PATH)
    args = parser.parse_args()

    if args.child:
        result = {
            "load": lambda: load(args.url, args.items) or {},
            "floor": lambda: floor(args.url),
            "report": lambda: report(args.url, args.resamples),
        }[args.child]()
        print(json.dumps(result))
        return

    rows = []
    for name in args.databases.split(","):
        if args.reuse:
            url = {"postgresql": args.pg_url, "sqlite": f"sqlite:///{args.sqlite_path}"}[name]
        else:
            url = {
                "postgresql": lambda: _prepare_postgres(args.pg_url),
                "sqlite": lambda: _prepare_sqlite(args.sqlite_path),
            }[name]()
            print(f"{name}: loading…", file=sys.stderr)
            _child("load", url, "--items", str(args.items))
        # Interleaved, so a change in the machine's load hits all three alike.
        runs = {
            "floor (grouped query + libraries)": [],
            "report, bootstrap 1,000": [],
            "report, bootstrap off": [],
        }
        for _ in range(args.repeat):
            runs["floor (grouped query + libraries)"].append(_child("floor", url))
            runs["report, bootstrap 1,000"].append(_child("report", url))
            runs["report, bootstrap off"].append(_child("report", url, "--resamples", "0"))
        floor_runs = runs["floor (grouped query + libraries)"]
        floor_min = min(r["seconds"] for r in floor_runs)
        floor_med = statistics.median(r["seconds"] for r in floor_runs)
        floor_cpu = statistics.median(r["cpu_s"] for r in floor_runs)
        for label, results in runs.items():
            best = min(r["seconds"] for r in results)
            med = statistics.median(r["seconds"] for r in results)
            cpu = statistics.median(r["cpu_s"] for r in results)
            peak = max(r["peak_mb"] for r in results)
            rows.append(
                (name, label, best, med, cpu, peak, best / floor_min, med / floor_med, cpu / floor_cpu)
            )
        query = [r["query_s"] for r in floor_runs]
        rows.append(
            (
                name,
                "  of which the grouped query",
                min(query),
                statistics.median(query),
                None,
                None,
                min(query) / floor_min,
                statistics.median(query) / floor_med,
                None,
            )
        )

    scores = args.items * N_ANNOTATORS * 5
    print(
        f"\n{args.items:,} items × {N_ANNOTATORS} annotators × 5 dimensions = {scores:,} scores; "
        f"median of {args.repeat} runs, each in a fresh process"
    )
    print("Wall seconds (best and median), this process's median CPU seconds (PostgreSQL's own work is not")
    print("in it), and each as a multiple of the floor's.")
    print(
        f"{'database':<11} {'what':<36} {'best s':>7} {'median s':>9} {'CPU s':>6} {'peak RSS MB':>12}"
        f" {'× floor best':>13} {'× floor median':>15} {'× floor CPU':>12}"
    )
    for name, label, best, med, cpu, peak, r_best, r_med, r_cpu in rows:

        def f(v, spec):
            return "" if v is None else format(v, spec)

        print(
            f"{name:<11} {label:<36} {best:>7.2f} {med:>9.2f} {f(cpu, '.2f'):>6} {f(peak, '.0f'):>12}"
            f" {r_best:>13.2f} {r_med:>15.2f} {f(r_cpu, '.2f'):>12}"
        )


if __name__ == "__main__":
    main()
