"""The lease statement's plan on PostgreSQL for a fresh batch that was never analysed.

Creates the database ``bench_lease_plan`` (dropped first; override with --pg-url), turns autovacuum
off on the app's tables so no statistics appear behind our back, adds a batch of --items items
(20,000 by default) and prints EXPLAIN ANALYZE of the lease statement: on the fresh batch, after
some progress, and after ANALYZE. The statement is rolled back each time.

    .venv/bin/python bench/lease_plan.py
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from annotator_http import django_setup, make_batch, recreate_postgres  # noqa: E402


def explain(label: str, batch, user) -> None:
    from django.db import connection, transaction
    from django.utils import timezone

    from annotator.rating.services import assignment_sql

    now = timezone.now()
    sql, params = assignment_sql.lease_statement(
        batch=batch, annotator_id=user.pk, now=now, expires=now + timedelta(minutes=30)
    )
    with transaction.atomic():  # EXPLAIN ANALYZE runs the lease: roll it back
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN (ANALYZE, COSTS OFF) " + sql, params)
            plan = [row[0] for row in cursor.fetchall()]
        transaction.set_rollback(True)
    print(f"--- {label}")
    print("\n".join(plan))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pg-url", default="postgres://postgres@127.0.0.1:5432/bench_lease_plan")
    parser.add_argument("--items", type=int, default=20000)
    args = parser.parse_args()
    os.environ.update(
        DATABASE_URL=recreate_postgres(args.pg_url), DJANGO_SETTINGS_MODULE="annotator.settings", DEBUG="1"
    )
    django_setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection

    from annotator.models import Batch

    call_command("migrate", verbosity=0)
    with connection.cursor() as cursor:
        cursor.execute("SELECT relname FROM pg_class WHERE relname LIKE 'annotator%%' AND relkind = 'r'")
        for (table,) in cursor.fetchall():
            cursor.execute(f'ALTER TABLE "{table}" SET (autovacuum_enabled = false)')
    user = get_user_model().objects.create_user("plan-annotator")
    batch = Batch.objects.get(pk=make_batch("plan", args.items))
    explain(f"fresh batch of {args.items} items, no statistics", batch, user)
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE annotator_item SET n_annotations = 3 WHERE batch_id = %s AND position < 300", [batch.pk]
        )
        cursor.execute(
            "UPDATE annotator_item SET n_annotations = 1, n_leased = 1 WHERE batch_id = %s AND position BETWEEN 300 AND 400",
            [batch.pk],
        )
    explain("after some progress (300 items complete, 101 half done), no statistics", batch, user)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    explain("after ANALYZE", batch, user)


if __name__ == "__main__":
    main()
