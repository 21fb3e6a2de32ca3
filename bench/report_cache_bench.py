"""The stored report's three targets on the demo batch: a report page seen before, the judge section
cold, and exclude/include.

    .venv/bin/python bench/report_cache_bench.py [--repeat 3] [--db /tmp/report_cache_bench.sqlite3]
                                                 [--code DIR]

Builds the demo database once (migrate, load_demo), then runs each repeat in a fresh process, as a
researcher through Django's test client (every middleware, DEBUG on). In each process, the stored
reports are deleted first, then it times, in order:

- the judge section cold: the process's first request, nothing stored (imports included);
- the report page cold: nothing stored for it (modules already imported);
- the report page and the judge section seen before (warm): served from the stored report;
- exclude and include: the POST alone (its redirect not followed), each followed by the report
  page, cold again since the batch's revision changed.

Printed: one row per measurement with the median of the repeats and each repeat's seconds.
Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = {
    "report page, seen before": 0.2,
    "judge section, cold": 2.0,
    "exclude (POST)": 0.5,
    "include (POST)": 0.5,
}


def child(db: Path, root: Path) -> None:
    import os

    os.environ.update(
        DATABASE_URL=f"sqlite:///{db}",
        DJANGO_SETTINGS_MODULE="annotator.settings",
        DEBUG="1",
        ALLOWED_HOSTS="testserver",
    )
    sys.path.insert(0, str(root))
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.urls import reverse

    from annotator.management.commands.load_demo import DEMO_BATCH
    from annotator.models import Annotation, Batch
    from tests.factories import make_user

    try:
        from annotator.models import ReportCache
    except ImportError:  # --code names a checkout from before stored reports
        ReportCache = None

    batch = Batch.objects.get(name=DEMO_BATCH)
    researcher = get_user_model().objects.filter(username="bench-researcher").first() or make_user(
        "bench-researcher", role="researcher"
    )
    annotator_pk = (
        Annotation.objects.filter(item__batch=batch)
        .order_by("annotator__username")
        .values_list("annotator_id", flat=True)
        .first()
    )
    if ReportCache is not None:
        ReportCache.objects.filter(batch=batch).delete()
    client = Client()
    client.force_login(researcher)
    page, judges = reverse("report_batch", args=[batch.pk]), reverse("report_judges", args=[batch.pk])
    times = {}

    def timed(name, method, url, status=200, **data):
        started = time.perf_counter()
        response = getattr(client, method)(url, data) if data else getattr(client, method)(url)
        times[name] = time.perf_counter() - started
        assert response.status_code == status, (name, response.status_code)

    timed("judge section, cold", "get", judges)
    timed("report page, cold", "get", page)
    timed("report page, seen before", "get", page)
    timed("judge section, seen before", "get", judges)
    timed(
        "exclude (POST)",
        "post",
        reverse("annotator_exclude", args=[batch.pk, annotator_pk]),
        302,
        reason="bench",
    )
    timed("report page after exclude, cold", "get", page)
    timed("report page after exclude, seen before", "get", page)
    timed("include (POST)", "post", reverse("annotator_include", args=[batch.pk, annotator_pk]), 302)
    timed("report page after include, cold", "get", page)
    print(json.dumps(times))


def build(db: Path, root: Path) -> None:
    env = {"DATABASE_URL": f"sqlite:///{db}", "DEBUG": "1", "PATH": "/usr/bin:/bin"}
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    for command in (["migrate", "-v0"], ["load_demo"]):
        subprocess.run(
            [sys.executable, "manage.py", *command], cwd=root, env=env, check=True, stdout=subprocess.DEVNULL
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--db", type=Path, default=Path("/tmp/report_cache_bench.sqlite3"))
    parser.add_argument(
        "--code",
        type=Path,
        default=ROOT,
        help="the checkout to time (e.g. an older one unpacked with git archive)",
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.db, args.code.resolve())
        return
    build(args.db, args.code.resolve())
    runs = []
    for _ in range(args.repeat):
        command = [sys.executable, __file__, "--child", "--db", str(args.db), "--code", str(args.code)]
        out = subprocess.run(command, cwd=args.code, check=True, capture_output=True, text=True).stdout
        runs.append(json.loads(out.strip().splitlines()[-1]))
    print(f"demo batch, {args.repeat} fresh processes, medians (seconds)")
    print(f"| {'measurement':<40} | median s | target s | runs |")
    print(f"|{'-' * 42}|----------|----------|------|")
    for name in runs[0]:
        values = [run[name] for run in runs]
        target = TARGETS.get(name)
        met = target is not None and statistics.median(values) <= target
        mark = "" if target is None else f"{target:.1f} {'met' if met else 'MISSED'}"
        print(
            f"| {name:<40} | {statistics.median(values):8.3f} | {mark:<8} | "
            + " ".join(f"{v:.3f}" for v in values)
            + " |"
        )


if __name__ == "__main__":
    main()
