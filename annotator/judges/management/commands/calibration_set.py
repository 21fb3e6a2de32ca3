"""python manage.py calibration_set BATCH (--sample N [--seed S] | --items FILE | --show | --retire) [--note TEXT]

Marks the batch's frozen calibration set: the items every version of a judge is compared on
(``run_judge --calibration-set`` calls only them; the judge card shows the versions side by side).
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotator.cli import batch_named, read_text
from annotator.counted import counted
from annotator.judges.selectors.calibration_set import calibration_set_of, set_item_ids
from annotator.judges.services.calibration_set import (
    CalibrationSetError,
    calibration_set_mark,
    calibration_set_retire,
)


def _ids(path: str) -> list[str]:
    lines = [line.split(",")[0].strip().strip('"') for line in read_text(path).splitlines()]
    return [
        i for n, i in enumerate(lines) if i and not (n == 0 and i == "item_id")
    ]  # a CSV's header is skipped


class Command(BaseCommand):
    help = "Mark, show or retire a batch's frozen calibration set (the items judge versions are compared on)."

    def add_arguments(self, parser):
        parser.add_argument("batch", help="batch name")
        how = parser.add_mutually_exclusive_group(required=True)
        how.add_argument("--sample", type=int, metavar="N", help="a random sample of N items (with --seed)")
        how.add_argument(
            "--items", metavar="FILE", help="item ids, one per line (or a CSV whose first column is item_id)"
        )
        how.add_argument("--show", action="store_true", help="print the set's items and fingerprint")
        how.add_argument("--retire", action="store_true", help="remove the set (judge scores are kept)")
        parser.add_argument("--seed", type=int, default=0, help="seed of the random sample (default 0)")
        parser.add_argument("--note", default="", help="why these items, shown on the judge card")

    def handle(self, *args, **o):
        batch = batch_named(o["batch"])
        if o["retire"]:
            done = calibration_set_retire(batch=batch)
            self.stdout.write("Retired the calibration set." if done else "The batch had no calibration set.")
            return
        if o["show"]:
            chosen = calibration_set_of(batch)
            if chosen is None:
                raise CommandError(f"batch \u201c{batch.name}\u201d has no calibration set.")
            ids = set_item_ids(chosen)
            self.stdout.write(
                f"{counted(len(ids), 'item', 'items')} ({chosen.how}), fingerprint {chosen.fingerprint}, "
                f"frozen {chosen.frozen_at:%Y-%m-%d %H:%M} UTC"
            )
            self.stdout.write("\n".join(ids))
            return
        try:
            chosen = calibration_set_mark(
                batch=batch,
                item_ids=_ids(o["items"]) if o["items"] else None,
                sample=o["sample"],
                seed=o["seed"],
                note=o["note"],
            )
        except CalibrationSetError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            self.style.SUCCESS(
                f"Froze the calibration set of \u201c{batch.name}\u201d: {counted(chosen.items.count(), 'item', 'items')} ({chosen.how}), "
                f"fingerprint {chosen.fingerprint[:12]}."
            )
        )
