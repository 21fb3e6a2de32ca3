"""python manage.py prolific_review BATCH --study-id ID [--approve] [--reject-failed-checks]
[--bonus-per-item X | --bonus-csv FILE] [--dry-run]

Reviews a Prolific study against the batch's workers: approves who earned the completion code,
rejects only by Prolific's rules, asks training failures (and workers whose time ran out before they
rated anything) to return, and pays bonuses exactly once.
The API token comes from PROLIFIC_API_TOKEN in the environment.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from django.core.management.base import BaseCommand, CommandError

from annotator.cli import batch_named
from annotator.studies.prolific import client as api
from annotator.studies.prolific.bonus_csv import BonusFileError, parse_amount, parse_bonus_csv
from annotator.studies.prolific.services.review import DEFAULT_MAX_REJECTION_RATE, ReviewError
from annotator.studies.prolific.services.run import prolific_review_run


def client_factory() -> api.ProlificClient:
    """The client the command uses; tests swap in one with a local fake of Prolific behind it."""
    return api.ProlificClient()


class Command(BaseCommand):
    help = "Approve, reject (by Prolific's rules) and pay bonuses (exactly once) for a batch's study."

    def add_arguments(self, parser):
        parser.add_argument("batch", help="batch name")
        parser.add_argument("--study-id", required=True, help="the Prolific study id (from the study's URL)")
        parser.add_argument("--approve", action="store_true", help="approve who earned the completion code")
        parser.add_argument(
            "--reject-failed-checks",
            action="store_true",
            help="reject 2+ failed attention checks in sessions over 5 minutes; ask training "
            "failures and workers who timed out before rating anything to return",
        )
        parser.add_argument(
            "--max-rejection-rate",
            default=str(DEFAULT_MAX_REJECTION_RATE),
            metavar="PERCENT",
            help="stop rejecting before the study's rejection rate passes this (default %(default)s)",
        )
        bonus = parser.add_mutually_exclusive_group()
        bonus.add_argument(
            "--bonus-per-item", metavar="X", help="bonus per item rated, e.g. 0.05 (study currency)"
        )
        bonus.add_argument("--bonus-csv", metavar="FILE", help="CSV with participant_id,amount[,reason]")
        parser.add_argument(
            "--dry-run", action="store_true", help="print what would be done; send nothing but GETs"
        )

    def handle(self, *args, **options):
        batch = batch_named(options["batch"])
        per_item, rows = None, None
        try:
            if options["bonus_per_item"] is not None:
                per_item = parse_amount(options["bonus_per_item"], "--bonus-per-item")
            if options["bonus_csv"]:
                with open(options["bonus_csv"], "rb") as handle:
                    rows = parse_bonus_csv(handle.read())
        except BonusFileError as exc:
            raise CommandError(f"{options['bonus_csv']}: " + "; ".join(exc.errors)) from None
        except OSError as exc:
            raise CommandError(f"Cannot read {options['bonus_csv']}: {exc.strerror}.") from None
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        try:
            max_rate = Decimal(options["max_rejection_rate"])
        except InvalidOperation:
            raise CommandError("--max-rejection-rate must be a percentage from 0 to 100, like 10.") from None
        try:
            with client_factory() as client:
                outcome = prolific_review_run(
                    batch=batch,
                    study_id=options["study_id"],
                    client=client,
                    approve=options["approve"],
                    reject_failed_checks=options["reject_failed_checks"],
                    bonus_per_item=per_item,
                    bonus_rows=rows,
                    dry_run=options["dry_run"],
                    max_rejection_rate=max_rate,
                )
        except (api.ProlificError, ReviewError) as exc:
            raise CommandError(str(exc)) from None
        for line in outcome.lines:
            self.stdout.write(line)
        if not outcome.ok:
            raise CommandError(
                "Not everything went through (see above); run the same command again: "
                "nothing done is done twice."
            )
