"""python manage.py select_for_review BATCH --n N [--judge J ...] --out FILE.csv [--queue-first]
python manage.py select_for_review BATCH --draw BUDGET [--seed S] [--judge J ...] --out FILE.csv
python manage.py select_for_review BATCH --retire-draw"""

from __future__ import annotations

import os

from django.core.management.base import BaseCommand, CommandError

from annotator.cli import batch_named_or_numbered
from annotator.counted import counted
from annotator.judges.selectors.draws import DRAW_COLUMNS, draw_rows
from annotator.judges.selectors.review import COLUMNS, ReviewError, review_candidates
from annotator.judges.services.review import (
    DrawError,
    ranked_queue_first,
    review_draw_forecast,
    review_draw_make,
    review_draw_retire,
)
from annotator.reports.exports.csv_safe import csv_lines


class Command(BaseCommand):
    help = (
        "List the items with judge scores and no human annotation (excluded annotators' left out) where the judges are least sure "
        "(disagreement between judges, spread of --samples, stated confidence, closeness to a cap), most uncertain "
        "first, as CSV: item_id, system_id, uncertainty, reason. --queue-first puts them first in the batch's queue. "
        "--draw BUDGET instead draws items at random with probabilities that follow the uncertainty, records them "
        "so the report weights their labels (active inference), puts the drawn items first in the queue and writes "
        "every candidate: item_id, system_id, pi, drawn, labelled_before, uncertainty."
    )

    def add_arguments(self, parser):
        parser.add_argument("batch", help="batch name (or its numeric id)")
        parser.add_argument("--n", help="how many items (the ranked list)")
        parser.add_argument(
            "--judge", nargs="+", default=None, help="only these judges (default: every judge with scores)"
        )
        parser.add_argument("--out", help="the CSV file to write")
        parser.add_argument(
            "--queue-first",
            action="store_true",
            help="also put the listed items first in this batch's annotation queue",
        )
        parser.add_argument(
            "--draw",
            metavar="BUDGET",
            help="draw about BUDGET items with recorded probabilities (see docs/ppi.md)",
        )
        parser.add_argument("--seed", help="the draw's seed (default: chosen at random and recorded)")
        parser.add_argument(
            "--retire-draw", action="store_true", help="retire the batch's draw in force (its record is kept)"
        )

    def handle(self, *args, batch, n, judge, out, queue_first, draw, seed, retire_draw, **options):
        found = batch_named_or_numbered(batch)
        modes = [
            m
            for m, on in (
                ("--n", n is not None),
                ("--draw", draw is not None),
                ("--retire-draw", retire_draw),
            )
            if on
        ]
        if len(modes) != 1:
            raise CommandError("Give exactly one of --n (a ranked list), --draw BUDGET or --retire-draw.")
        if retire_draw:
            retired = review_draw_retire(batch=found)
            if retired is None:
                raise CommandError(f"Batch {found.name!r} has no draw in force.")
            self.stderr.write(
                f"Retired draw #{retired.pk} of batch {found.name!r}; the report is back to PPI++"
            )
            return
        if not out:
            raise CommandError("--out FILE.csv is required with --n and --draw.")
        if seed is not None and draw is None:
            raise CommandError("--seed goes with --draw.")
        if draw is not None:
            if queue_first:
                raise CommandError("--draw always puts the drawn items first; leave out --queue-first.")
            self._draw(found, draw, seed, judge, out)
            return
        try:
            rows = review_candidates(batch=found, n=n, judges=judge)
        except ReviewError as exc:
            raise CommandError(str(exc)) from None
        self._write(out, COLUMNS, (r.cells() for r in rows))
        self.stderr.write(f"Wrote {counted(len(rows), 'item', 'items')} to {out}")
        if queue_first and rows:
            try:
                moved = ranked_queue_first(batch=found, item_ids=[r.item_id for r in rows])
            except DrawError as exc:
                raise CommandError(f"Nothing was moved: {exc}.") from None
            self.stderr.write(
                f"Put {counted(moved, 'item', 'items')} first in the queue of batch {found.name!r}"
            )

    def _draw(self, batch, budget, seed, judges, out):
        try:  # opened before drawing, so a path that cannot be written leaves no draw behind
            fh = open(out, "w", encoding="utf-8", newline="")
        except OSError as exc:
            raise CommandError(f"Cannot write {out}: {exc.strerror}") from None
        with fh:
            try:
                # Said before the draw is made: whether routing should pay off at all.
                self.stderr.write(review_draw_forecast(batch=batch, budget=budget, judges=judges).sentence())
                made = review_draw_make(batch=batch, budget=budget, seed=seed, judges=judges)
            except DrawError as exc:
                fh.close()
                os.unlink(out)
                raise CommandError(f"Nothing was drawn: {exc}.") from None
            rows = draw_rows(made)
            fh.writelines(csv_lines(DRAW_COLUMNS, ([r[c] for c in DRAW_COLUMNS] for r in rows)))
        # Items labelled before the draw are in its record (π = 1) but were not drawn for labelling: the
        # count is the candidates drawn, as the report's draw.n_drawn counts them.
        candidates = [r for r in rows if not r["labelled_before"]]
        drawn = sum(r["drawn"] for r in candidates)
        before = len(rows) - len(candidates)
        self.stderr.write(
            f"Draw #{made.pk} of batch {batch.name!r} (budget {made.budget}, seed {made.seed}): drew {drawn} of "
            f"{counted(len(candidates), 'candidate', 'candidates')} for labelling and put them first in the queue, before every other "
            f"item; {counted(before, 'item', 'items')} labelled before the draw {'joins' if before == 1 else 'join'} the estimate with π = 1; wrote every row to {out}"
        )

    def _write(self, out, columns, cells):
        try:
            with open(out, "w", encoding="utf-8", newline="") as fh:
                fh.writelines(csv_lines(columns, cells))
        except OSError as exc:
            raise CommandError(f"Cannot write {out}: {exc.strerror}") from None
