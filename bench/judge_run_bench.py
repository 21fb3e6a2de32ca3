"""A paid judge run against a local fake endpoint at 200 ms a call: speed, faults, interruption.

    .venv/bin/python bench/judge_run_bench.py [--items 1000] [--concurrency 16] [--latency 0.2]

Three runs of ``judge_run`` (the code path of ``run_judge`` and the judges page) on a fresh SQLite file,
each on its own batch of distinct items, against ``tests/fake_judge.py`` in a process of its own:

1. clean: every call answers after ``--latency`` seconds.
2. faults: every 5th call fails in turn with a 429 (Retry-After: 0), a 500 and a truncated body.
3. interrupted: the run is stopped when half the calls are answered, then run again to the end.

Per run: calls the endpoint received, calls per item, items saved, items lost (no saved call),
duplicates (items the endpoint answered more than once, or with more than one saved call), seconds.
Targets: clean ≤ 20 s; faults 0 lost, 0 duplicates, calls ≤ 1.25 × items; interrupted ≤ 1.1 × items.
Not part of the test suite.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from bench_django import django_on_fresh_sqlite

ROOT = Path(__file__).resolve().parent.parent
DB = Path("/tmp/judge_run_bench.sqlite3")


def stats(url: str) -> dict:
    import httpx

    return httpx.get(url.removesuffix("/v1") + "/stats").json()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency", type=float, default=0.2)
    args = parser.parse_args()
    django_on_fresh_sqlite(DB)
    from django.core.management import call_command

    from annotator.judges.engine.client import ChatClient
    from annotator.judges.engine.runner import judge_run
    from annotator.judges.engine.templates import load_template
    from annotator.models import Batch, Item, JudgeCall
    from hcs.rubric import Rubric

    call_command("migrate", verbosity=0)
    template = load_template("hub_answer_correctness")

    def batch(name: str) -> Batch:
        created = Batch.objects.create(name=name, rubric=Rubric.default().to_dict(), k=3)
        Item.objects.bulk_create(
            Item(
                batch=created,
                item_id=f"{name}-{n}",
                position=n,
                prompt=f"Question {name}-{n}: how far to the coast?",
                response=f"About {n} km.",
            )
            for n in range(args.items)
        )
        return created

    def run(url: str, target: Batch, stop_at: int | None = None) -> None:
        client = ChatClient(
            base_url=url, model="bench", backoff=0.05, max_backoff=1.0, max_retries=6, timeout=30
        )

        def progress(state):
            if stop_at is not None and state.done >= stop_at:
                client.stop.set()  # what Ctrl-C, SIGTERM and a cancelled job do

        try:
            judge_run(
                batch=target,
                template=template,
                client=client,
                judge_name=f"bench/{target.name}",
                concurrency=args.concurrency,
                progress=progress,
            )
        finally:
            client.close()

    rows = []
    for name, faults, halves in (
        ("clean", False, False),
        ("faults", True, False),
        ("interrupted", False, True),
    ):
        target = batch(name)
        command = [sys.executable, str(ROOT / "tests" / "fake_judge.py"), "--latency", str(args.latency)]
        endpoint = subprocess.Popen(
            command + (["--faults"] if faults else []), stdout=subprocess.PIPE, text=True
        )
        try:
            url = endpoint.stdout.readline().strip()
            started = time.perf_counter()
            if halves:
                run(url, target, stop_at=args.items // 2)
                first = stats(url)["calls"]
                run(url, target)
            else:
                run(url, target)
            seconds = time.perf_counter() - started
            seen = stats(url)
        finally:
            endpoint.terminate()
            endpoint.wait()
        calls = JudgeCall.objects.filter(item__batch=target)
        saved = calls.values("item").distinct().count()
        duplicates = sum(1 for n in seen["answered"].values() if n > 1) + (calls.count() - saved)
        note = f"stopped after {first} calls, then rerun" if halves else ""
        rows.append(
            (
                name,
                args.items,
                seen["calls"],
                seen["calls"] / args.items,
                saved,
                args.items - saved,
                duplicates,
                seconds,
                note,
            )
        )
    print(f"{args.items} items, concurrency {args.concurrency}, {args.latency * 1000:.0f} ms a call")
    print(
        f"{'run':<12} {'items':>6} {'calls':>6} {'calls/item':>10} {'saved':>6} {'lost':>5} {'dupl.':>5} {'seconds':>8}"
    )
    for name, items, n_calls, ratio, saved, lost, dup, seconds, note in rows:
        print(
            f"{name:<12} {items:>6} {n_calls:>6} {ratio:>10.3f} {saved:>6} {lost:>5} {dup:>5} {seconds:>8.1f}  {note}"
        )
    clean, faults, interrupted = rows
    ok = (
        clean[7] <= 20
        and faults[5] == faults[6] == 0
        and faults[3] <= 1.25
        and interrupted[3] <= 1.1
        and interrupted[5] == interrupted[6] == 0
    )
    print("targets met" if ok else "TARGETS MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
