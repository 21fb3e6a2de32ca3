"""python manage.py add_annotators FILE.csv --batch NAME [--days D]: accounts from a list.

The CSV has the columns username,email. Each account may rate only that batch and gets a
one-time sign-in link (printed; only its hash is stored) where its owner sets a password.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotator.cli import add_link_options, batch_named, link_base, read_file
from annotator.counted import counted
from annotator.reports.exports.csv_safe import SafeWriter
from annotator.studies.link_urls import signin_url
from annotator.studies.services.links import DEFAULT_SIGNIN_DAYS, LinkError, annotators_add
from annotator.uploads.files.annotator_list import AnnotatorListError, parse_annotator_list


class Command(BaseCommand):
    help = "Make annotator accounts from a username,email CSV and print a one-time sign-in link for each."

    def add_arguments(self, parser):
        parser.add_argument("file", help="CSV with the columns username,email")
        parser.add_argument("--batch", required=True, help="the batch they may rate")
        add_link_options(parser, days=DEFAULT_SIGNIN_DAYS)

    def handle(self, *args, **options):
        batch = batch_named(options["batch"])
        try:
            rows = parse_annotator_list(read_file(options["file"]))
            accounts = annotators_add(rows=rows, batch=batch, days=options["days"])
        except AnnotatorListError as exc:
            raise CommandError(
                f"{options['file']}: nothing was created:\n  " + "\n  ".join(exc.errors)
            ) from None
        except LinkError as exc:
            raise CommandError(str(exc)) from None
        base = link_base(self, options)
        writer = SafeWriter(self.stdout)
        writer.writerow(("username", "email", "signin_link"))
        for a in accounts:
            writer.writerow((a.username, a.email, signin_url(a.token, base)))
        made = counted(len(accounts), "account", "accounts")
        days = counted(options["days"], "day", "days")
        self.stderr.write(f"{made} for {batch.name}; each link works once, for {days}.")
