"""python manage.py export_report BATCH --format json|csv|html [--table dimensions|items|scores|annotations|judges] [--out FILE]"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotator.exports import report_csv
from annotator.exports.judges_csv import judges_csv
from annotator.exports.report_html import report_html
from annotator.exports.report_json import report_json
from annotator.models import Batch
from annotator.selectors.judges import alt_test_epsilon
from annotator.selectors.reports import batch_report
from hcs.agreement.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED


class Command(BaseCommand):
    help = (
        "Export a batch's agreement report as JSON, CSV or one self-contained HTML file. "
        "CSV tables: dimensions (agreement per dimension), items (overall HCS mean and SD per item), "
        "scores (one row per score, long), "
        "annotations (the annotation template's columns, re-importable with import_annotations)."
    )

    def add_arguments(self, parser):
        parser.add_argument("batch", help="batch name (or its numeric id)")
        parser.add_argument("--format", choices=["json", "csv", "html"], default="json")
        parser.add_argument("--table", choices=["dimensions", "items", "scores", "annotations", "judges"], default="dimensions",
                            help="which CSV table (with --format csv)")
        parser.add_argument("--out", help="write to this file instead of standard output")
        parser.add_argument("--resamples", type=int, default=DEFAULT_RESAMPLES, help="bootstrap resamples (0: no CIs)")
        parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
        parser.add_argument("--epsilon", type=float, default=0.2,
                            help="the alt-test's cost-benefit margin ε for LLM judges (default 0.2)")

    def handle(self, *args, batch, format, table, out, resamples, seed, epsilon, **options):
        found = Batch.objects.filter(name=batch).first()
        if found is None and batch.isdigit():
            found = Batch.objects.filter(pk=int(batch)).first()
        if found is None:
            names = ", ".join(Batch.objects.order_by("name").values_list("name", flat=True)[:20]) or "none"
            raise CommandError(f"No batch named {batch!r}. Batches: {names}.")
        if resamples < 0:
            raise CommandError("--resamples must be 0 or more")
        if not 0 <= epsilon < 1:
            raise CommandError("--epsilon must lie in [0, 1)")
        if format == "csv" and table == "scores":
            chunks = report_csv.scores_csv(batch=found)
        elif format == "csv" and table == "annotations":
            chunks = report_csv.annotations_csv(batch=found)
        else:
            with alt_test_epsilon(epsilon):
                report = batch_report(batch=found, n_resamples=resamples, seed=seed)
            if format == "json":
                chunks = [report_json(report) + "\n"]
            elif format == "html":
                chunks = [report_html(report)]
            elif table == "judges":
                chunks = judges_csv(report)
            elif table == "items":
                chunks = report_csv.items_csv(report)
            else:
                chunks = report_csv.dimensions_csv(report)
        if out:
            with open(out, "w", encoding="utf-8", newline="") as fh:
                fh.writelines(chunks)
            self.stderr.write(f"Wrote {out}")
        else:
            for chunk in chunks:
                self.stdout.write(chunk, ending="")
