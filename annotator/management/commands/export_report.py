"""python manage.py export_report BATCH [--format json|csv|html|jsonl] [--table NAME] [--out FILE]

python manage.py export_report BATCH --format hf --out DIR [--rater-names] [--push-to-hub REPO] (docs/hf.md)"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotator.cli import batch_named_or_numbered
from annotator.reports.exports.formats import EXPORT_FORMATS, TABLES, export_chunks
from annotator.reports.hf.hub import HubRefused, hub_target
from annotator.reports.selectors.options import ReportOptions, report_with_options
from hcs.agreement.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED
from hcs.calibration.alt_test import DEFAULT_EPSILON


class Command(BaseCommand):
    help = (
        "Export a batch's agreement report as JSON, CSV or one self-contained HTML file. "
        "CSV tables: dimensions (agreement per dimension), items (overall HCS mean and SD per item), "
        "scores (one row per score, long), "
        "annotations (the annotation template's columns, re-importable with import_annotations), "
        "judges (LLM-judge calibration per judge and dimension), "
        "judge_scores (every judge score per item, dimension and sample), "
        "pairwise_verdicts (every pairwise verdict with its criterion scores). "
        "JSON Lines tables (--format jsonl, or just --table): judge_calls (every judge call: prompt hash, raw "
        "output, parse status and error, tokens, latency, attempts). "
        "--format hf --out DIR writes a Hugging Face dataset folder (docs/hf.md)."
    )

    def add_arguments(self, parser):
        parser.add_argument("batch", help="batch name (or its numeric id)")
        parser.add_argument(
            "--format",
            choices=[*(k for k in EXPORT_FORMATS if "." not in k), "csv", "jsonl"],
            help="json (default), html, or a table's: csv or jsonl",
        )
        parser.add_argument(
            "--table",
            choices=list(TABLES),
            help="which table (with --format csv: dimensions by default; jsonl: judge_calls)",
        )
        parser.add_argument(
            "--out",
            help="write to this file instead of standard output (with --format hf: a new or empty folder)",
        )
        parser.add_argument(
            "--rater-names",
            action="store_true",
            help="with --format hf: name raters by username instead of a pseudonym",
        )
        parser.add_argument(
            "--push-to-hub",
            metavar="REPO",
            help="with --format hf: upload the folder to this Hugging Face dataset repository "
            "(owner/name; needs HF_TOKEN)",
        )
        parser.add_argument(
            "--resamples", type=int, default=DEFAULT_RESAMPLES, help="bootstrap resamples (0: no CIs)"
        )
        parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
        parser.add_argument(
            "--epsilon",
            type=float,
            default=DEFAULT_EPSILON,
            help=f"the alt-test's cost-benefit margin ε for LLM judges (default {DEFAULT_EPSILON})",
        )

    def handle(
        self, *args, batch, format, table, out, resamples, seed, epsilon, rater_names, push_to_hub, **options
    ):
        if format != "hf" and (rater_names or push_to_hub):
            raise CommandError("--rater-names and --push-to-hub go with --format hf.")
        if format == "hf":
            try:  # a missing token stops the command before any work
                hub = hub_target(push_to_hub) if push_to_hub else None
            except HubRefused as exc:
                raise CommandError(f"Nothing was written: {exc}.") from exc
            if not out:
                raise CommandError("--format hf writes a folder: give it with --out DIR.")
        found = batch_named_or_numbered(batch)
        options = ReportOptions(n_resamples=resamples, seed=seed, epsilon=epsilon)
        if options.errors():
            raise CommandError("; ".join("--" + e for e in options.errors()))
        if format == "hf":
            self._hf(found, options, out, rater_names, hub)
            return
        export = EXPORT_FORMATS[_format_key(format, table)]
        report = report_with_options(batch=found, options=options) if export.needs_report else None
        chunks = export_chunks(export, batch=found, report=report)
        if out:
            with open(out, "w", encoding="utf-8", newline="") as fh:
                fh.writelines(chunks)
            self.stderr.write(f"Wrote {out}")
        else:
            for chunk in chunks:
                self.stdout.write(chunk, ending="")

    def _hf(self, batch, options, out, rater_names, hub) -> None:
        from annotator.reports.hf.hub import dataset_push
        from annotator.reports.hf.writer import DatasetRefused, card_report, dataset_write, destination_check

        try:
            destination_check(out)  # before the statistics are computed
            report = card_report(
                batch=batch, n_resamples=options.n_resamples, seed=options.seed, epsilon=options.epsilon
            )
            written = dataset_write(batch=batch, report=report, out=out, rater_names=rater_names)
        except DatasetRefused as exc:
            raise CommandError(f"Nothing was written: {exc}.") from exc
        counts = ", ".join(f"{name} {n:,} rows" for name, n in written.rows.items())
        self.stderr.write(f"Wrote {written.folder} ({counts})")
        if hub is not None:
            try:
                url = dataset_push(folder=written.folder, target=hub)
            except Exception as exc:  # the Hub's errors are many; the folder is written either way
                raise CommandError(
                    f"The upload to {hub.repo} failed ({type(exc).__name__}: {exc}). "
                    f"The dataset is in {written.folder}; run the command again or upload it "
                    "with huggingface-cli."
                ) from exc
            self.stderr.write(f"Uploaded to {url}")


def _format_key(format: str | None, table: str | None) -> str:
    """The export format's key; a table names its own format, which ``--format`` may repeat but not contradict."""
    if table is None:
        return {"csv": "dimensions.csv", "jsonl": "judge_calls.jsonl"}.get(format or "json", format or "json")
    key = TABLES[table]
    kind = key.rsplit(".", 1)[1]
    if format is not None and format != kind:
        raise CommandError(
            f"--table {table} is a {kind.upper()} table: use --format {kind}, or leave --format out."
        )
    return key
