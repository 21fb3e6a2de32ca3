"""Paging through a large batch's annotations with the HTTP API, and the cost of a page.

``python bench/api_bench.py [--items 20000] [--limit 1000] [--url postgres://.../api_bench | sqlite:////tmp/x.sqlite3]`` loads
``--items`` items × 5 annotators × 5 dimensions into a fresh database with the report benchmark's
loader (every annotation with the same timestamp, as an import makes them: the hardest case for
the (submitted_at, id) cursor), then reads every page of ``/api/v1/batches/{id}/annotations`` with a
token through the Django test client (no network) and prints rows, pages, seconds and the
p50 / max time of a page, first and last pages included.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.report_bench import BATCH, load

PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


def _fresh_postgres(url: str) -> None:
    import psycopg

    name = url.rsplit("/", 1)[1]
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--limit", type=int, default=1000)
    parser.add_argument("--url", default="postgres://postgres@127.0.0.1:5432/api_bench")
    args = parser.parse_args()
    os.environ.setdefault("ANNOTATOR_API_RATE", "1000000/min")
    os.environ.setdefault("ALLOWED_HOSTS", "testserver")
    if args.url.startswith("postgres"):
        _fresh_postgres(args.url)
    elif args.url.startswith("sqlite:///"):
        for suffix in ("", "-wal", "-shm"):
            Path(args.url.removeprefix("sqlite:///") + suffix).unlink(missing_ok=True)
    load(args.url, args.items)  # sets Django up on args.url

    from django.contrib.auth import get_user_model
    from django.test import Client

    from annotator.models import Batch
    from annotator.services.api_tokens import api_token_create

    admin = get_user_model().objects.create_user("bench-admin", is_staff=True)
    client = Client(
        headers={"Authorization": "Bearer " + api_token_create(user=admin, name="bench", days=1)[1]}
    )
    batch = Batch.objects.get(name=BATCH)
    url, rows, times, ids = f"/api/v1/batches/{batch.pk}/annotations?limit={args.limit}", 0, [], set()
    started = time.perf_counter()
    while url:
        t0 = time.perf_counter()
        response = client.get(url)
        times.append(time.perf_counter() - t0)
        assert response.status_code == 200, response.content[:300]
        page = response.json()
        rows += len(page["items"])
        ids.update(r["annotation_id"] for r in page["items"])
        url = page["next"]
    total = time.perf_counter() - started
    print(
        f"| {args.url.split(':')[0]} | {args.items:,} | {len(ids):,} | {rows:,} | {len(times)} | {total:.1f} | "
        f"{statistics.median(times) * 1000:.0f} | {max(times) * 1000:.0f} | {times[0] * 1000:.0f} / {times[-1] * 1000:.0f} |"
    )
    assert len(ids) == args.items * 5 and rows == args.items * 25, "a page lost or repeated annotations"


if __name__ == "__main__":
    main()
