"""Import benchmark: generate a batch file and import it through the upload's code path.

    .venv/bin/python bench/import_bench.py [--rows 100000] [--databases sqlite,postgresql] [--format csv|jsonl]

Each database runs in a fresh child process on a fresh database (SQLite file under /tmp;
PostgreSQL database ``imports_bench``, dropped and re-created). The child reads the file and
calls ``batch_import_file`` (parser + checks + one transaction), the function the upload page's
confirm step and ``manage.py import_batch`` call. Printed: rows, seconds, rows/s, peak RSS.
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
PG_ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres"
PG_URL = "postgres://postgres@127.0.0.1:5432/imports_bench"
SQLITE_PATH = Path("/tmp/imports_bench.sqlite3")

SYSTEMS = ("navigator-v2", "navigator-v1", "baseline-chat")
PLACES = (
    "the airport",
    "Union Station",
    "the Art Museum",
    "Lincoln Elementary",
    "the stadium",
    "Harbor St depot",
    "Cannon Beach",
    "the courthouse",
    "Grand Park",
    "Lake Tahoe",
)
CONSTRAINTS = (
    "avoid tolls",
    "arrive before 8AM",
    "wheelchair accessible",
    "avoid highways in snow",
    "one charging stop",
    "no busy arterials",
    "step-free access",
    "truck route",
)


COLUMNS = ["item_id", "prompt", "response", "system_id", "context", "constraints", "conversation"]


def generate(path: Path, rows: int, seed: int = 7) -> None:
    """A realistic batch file: three systems per prompt, some context, constraints and conversations."""
    rng = random.Random(seed)
    jsonl = path.suffix == ".jsonl"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        if not jsonl:
            writer.writerow(COLUMNS)
        for i in range(rows):
            prompt_no = i // len(SYSTEMS)
            place = PLACES[prompt_no % len(PLACES)]
            cons = random.Random(prompt_no).sample(CONSTRAINTS, k=1 + prompt_no % 3)  # same for every system
            prompt = f"Request {prompt_no}: plan a route to {place}; {', '.join(cons)}."
            response = (
                f"Route {i}: head north on Main St for {rng.randint(1, 9)} blocks, then take Route {rng.randint(1, 99)} "
                f"east. This keeps to {cons[0]}. Expect about {rng.randint(10, 60)} minutes; "
                + "leave a little earlier if the weather turns. "
                * rng.randint(1, 4)
            )
            context = f"Departure at {rng.randint(5, 9)}:{rng.randint(0, 59):02d} AM." if i % 2 else ""
            conversation = (
                json.dumps(
                    [
                        {"role": "user", "content": prompt},
                        {"role": "assistant", "content": "Where from?"},
                        {"role": "user", "content": "From home."},
                    ]
                )
                if i % 10 == 0
                else ""
            )
            row = [
                f"item-{i:07d}",
                prompt,
                response,
                SYSTEMS[i % len(SYSTEMS)],
                context,
                "; ".join(cons),
                conversation,
            ]
            if jsonl:
                record = dict(zip(COLUMNS, row), constraints=cons)
                record["conversation"] = json.loads(conversation) if conversation else []
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            else:
                writer.writerow(row)


def child(file: Path, name: str) -> None:
    import resource

    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from django.test import override_settings

    from annotator.models import Item
    from annotator.uploads.services.batches import batch_import_file
    from hcs.rubric import Rubric

    rubric = Rubric.default()
    start = time.perf_counter()
    data = file.read_bytes()
    with override_settings(ANNOTATOR_UPLOAD_MAX_BYTES=2**40):
        batch = batch_import_file(data=data, filename=file.name, name=name, k=3, rubric=rubric)
    seconds = time.perf_counter() - start
    count = Item.objects.filter(batch=batch).count()
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"rows": count, "seconds": seconds, "rss_mb": rss_mb, "bytes": len(data)}))


def fresh_database(database: str) -> str:
    if database == "sqlite":
        for suffix in ("", "-wal", "-shm"):
            Path(f"{SQLITE_PATH}{suffix}").unlink(missing_ok=True)
        return f"sqlite:///{SQLITE_PATH}"
    import psycopg

    with psycopg.connect(PG_ADMIN_URL.replace("postgres://", "postgresql://"), autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS imports_bench")
        conn.execute("CREATE DATABASE imports_bench")
    return PG_URL


def run(database: str, file: Path) -> dict:
    env = dict(
        os.environ,
        DATABASE_URL=fresh_database(database),
        DJANGO_SETTINGS_MODULE="annotator.settings",
        SECRET_KEY="bench-only-not-secret",
        DEBUG="0",
    )
    result = subprocess.run(
        [sys.executable, __file__, "--child", str(file)],
        check=False,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise SystemExit(f"{database} run failed:\n{result.stderr}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--databases", default="sqlite,postgresql")
    parser.add_argument("--format", choices=["csv", "jsonl"], default="csv")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        sys.path.insert(0, str(ROOT))
        child(Path(args.child), name="bench")
        return
    file = Path(f"/tmp/imports_bench_{args.rows}.{args.format}")
    if not file.exists():
        generate(file, args.rows)
    print(f"file: {file} ({args.format}, {file.stat().st_size / 2**20:.1f} MB, {args.rows} items)")
    print(f"{'database':<12} {'rows':>8} {'seconds':>8} {'rows/s':>9} {'peak RSS MB':>12}")
    for database in args.databases.split(","):
        r = run(database.strip(), file)
        print(
            f"{database:<12} {r['rows']:>8} {r['seconds']:>8.2f} {r['rows'] / r['seconds']:>9.0f} {r['rss_mb']:>12.0f}"
        )


if __name__ == "__main__":
    main()
