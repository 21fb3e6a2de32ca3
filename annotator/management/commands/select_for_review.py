"""python manage.py select_for_review BATCH --n N [--judge J ...] --out FILE.csv [--queue-first]"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotator.exports.csv_safe import csv_lines
from annotator.judges.selectors.review import COLUMNS, ReviewError, review_candidates
from annotator.judges.services.review import items_queue_first
from annotator.models import Batch


class Command(BaseCommand):
    help = (
        "List the items with judge scores and no human annotation (excluded annotators' left out) where the judges are least sure "
        "(disagreement between judges, spread of --samples, stated confidence, closeness to a cap), most uncertain "
        "first, as CSV: item_id, system_id, uncertainty, reason. --queue-first puts them first in the batch's queue."
    )

    def add_arguments(self, parser):
        parser.add_argument("batch", help="batch name (or its numeric id)")
        parser.add_argument("--n", required=True, help="how many items")
        parser.add_argument(
            "--judge", nargs="+", default=None, help="only these judges (default: every judge with scores)"
        )
        parser.add_argument("--out", required=True, help="the CSV file to write")
        parser.add_argument(
            "--queue-first",
            action="store_true",
            help="also put the listed items first in this batch's annotation queue",
        )

    def handle(self, *args, batch, n, judge, out, queue_first, **options):
        found = Batch.objects.filter(name=batch).first()
        if found is None and batch.isdigit():
            found = Batch.objects.filter(pk=int(batch)).first()
        if found is None:
            names = ", ".join(Batch.objects.order_by("name").values_list("name", flat=True)[:20]) or "none"
            raise CommandError(f"No batch named {batch!r}. Batches: {names}.")
        try:
            rows = review_candidates(batch=found, n=n, judges=judge)
        except ReviewError as exc:
            raise CommandError(str(exc)) from None
        try:
            with open(out, "w", encoding="utf-8", newline="") as fh:
                fh.writelines(csv_lines(COLUMNS, (r.cells() for r in rows)))
        except OSError as exc:
            raise CommandError(f"Cannot write {out}: {exc.strerror}") from None
        self.stderr.write(f"Wrote {len(rows)} item(s) to {out}")
        if queue_first and rows:
            moved = items_queue_first(batch=found, item_ids=[r.item_id for r in rows])
            self.stderr.write(f"Put {moved} item(s) first in the queue of batch {found.name!r}")
