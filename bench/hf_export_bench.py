"""Hugging Face dataset export benchmark: 1,000,000 ratings (200,000 items × 5 raters × 5 dimensions).

    .venv/bin/python bench/hf_export_bench.py [--items 200000] [--databases sqlite,postgresql] [--resamples 1000]
        [--sqlite-path /tmp/hf_bench.sqlite3] [--pg-url postgres://postgres@127.0.0.1:5432/hf_bench] [--keep]

The batch is loaded once per database in a child process (report_bench's loader: COPY on PostgreSQL,
executemany on SQLite). Then, in a fresh child process so peak RSS is its own, the export runs as
``export_report BATCH --format hf --out DIR`` runs it: the agreement report (for the card, ``card_report``), then
``dataset_write`` (ratings streamed to parquet, items, judge tables, card). Printed: wall seconds of
the report and of the writing, the total, their CPU seconds (the wall time on a shared machine
depends on its load, printed too), peak RSS, rows and bytes written. Targets: total ≤ 60 s and
peak RSS ≤ 1 GB for 1,000,000 ratings. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import report_bench  # noqa: E402  (the loader and its batch)

TARGET_SECONDS, TARGET_MB = 60.0, 1024.0


def measure(url: str, resamples: int) -> dict:
    report_bench._setup_django(url)
    from annotator.models import Batch
    from annotator.reports.hf.writer import card_report, dataset_write

    batch = Batch.objects.get(name=report_bench.BATCH)
    out = Path(tempfile.mkdtemp(prefix="hf-bench-")) / "dataset"
    try:
        start, cpu0 = time.perf_counter(), report_bench._cpu()
        report = card_report(batch=batch, n_resamples=resamples)  # as export_report --format hf builds it
        report_s, cpu1 = time.perf_counter() - start, report_bench._cpu()
        written = dataset_write(batch=batch, report=report, out=out)
        write_s, cpu2 = time.perf_counter() - start - report_s, report_bench._cpu()
        size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    finally:
        shutil.rmtree(out.parent, ignore_errors=True)
    return {
        "report_s": report_s,
        "write_s": write_s,
        "total_s": report_s + write_s,
        "report_cpu": cpu1 - cpu0,
        "write_cpu": cpu2 - cpu1,
        "load": os.getloadavg()[0],
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "rows": written.rows,
        "bytes": size,
    }


def _child(*args: str) -> str:
    result = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, check=False)
    if result.returncode:
        sys.exit(result.stderr)
    sys.stderr.write(result.stderr)
    return result.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=200_000)
    parser.add_argument("--databases", default="sqlite")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--sqlite-path", default="/tmp/hf_bench.sqlite3")
    parser.add_argument("--pg-url", default="postgres://postgres@127.0.0.1:5432/hf_bench")
    parser.add_argument("--keep", action="store_true", help="reuse a database loaded by an earlier run")
    parser.add_argument("--child")
    parser.add_argument("--url")
    args = parser.parse_args()
    if args.child == "load":
        report_bench.load(args.url, args.items)
        return
    if args.child == "measure":
        print(json.dumps(measure(args.url, args.resamples)))
        return
    for database in args.databases.split(","):
        if database == "sqlite":
            url = f"sqlite:///{args.sqlite_path}"
            if not args.keep:
                Path(args.sqlite_path).unlink(missing_ok=True)
        else:
            url = (
                args.pg_url if args.keep else report_bench._prepare_postgres(args.pg_url)
            )  # dropped and re-created
        if not args.keep:
            _child("--child", "load", "--url", url, "--items", str(args.items))
        result = json.loads(_child("--child", "measure", "--url", url, "--resamples", str(args.resamples)))
        ratings = result["rows"]["ratings"]
        ok = result["total_s"] <= TARGET_SECONDS and result["peak_mb"] <= TARGET_MB
        print(
            f"{database}: {ratings:,} ratings, {result['rows']['items']:,} items: report {result['report_s']:.1f} s "
            f"+ write {result['write_s']:.1f} s = {result['total_s']:.1f} s, peak RSS {result['peak_mb']:.0f} MB, "
            f"{result['bytes'] / 1e6:.1f} MB written; CPU report {result['report_cpu']:.1f} s + write "
            f"{result['write_cpu']:.1f} s (load average {result['load']:.1f} on {os.cpu_count()} cores) "
            f"({'within' if ok else 'OVER'} the targets {TARGET_SECONDS:.0f} s, {TARGET_MB:.0f} MB)"
        )


if __name__ == "__main__":
    main()
