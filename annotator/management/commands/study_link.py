"""python manage.py study_link BATCH --platform prolific --quota 20 --completion-code CODE ...

Prints the study URL to paste into the crowd platform. Workers who open it are signed in as a
pseudonymous annotator of this batch, bound to their platform id, with no password.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotator.cli import add_link_options, batch_named, link_base, read_text
from annotator.counted import counted
from annotator.studies.crowd import PLATFORMS
from annotator.studies.link_urls import study_url
from annotator.studies.selectors import FULL_WARNING, batch_has_free_slot
from annotator.studies.services.links import DEFAULT_STUDY_DAYS, LinkError, study_link_create


def _text(path: str | None) -> str | None:
    return None if path is None else read_text(path)


class Command(BaseCommand):
    help = "Make a crowd-platform study link for a batch and print the URL to paste into the platform."

    def add_arguments(self, parser):
        parser.add_argument("batch", help="batch name")
        parser.add_argument("--platform", choices=sorted(PLATFORMS), default="prolific")
        parser.add_argument("--quota", type=int, required=True, help="most items one worker rates")
        parser.add_argument("--completion-code", required=True, help="the code workers get when they finish")
        parser.add_argument(
            "--completion-url", default="", help="where finished workers go (Prolific: built from the code)"
        )
        parser.add_argument(
            "--screen-out-code", default="", help="the code for workers screened out by quality checks"
        )
        parser.add_argument("--no-consent-code", default="", help="the code for workers who decline consent")
        parser.add_argument("--minutes", type=int, default=None, help="longest session in minutes")
        parser.add_argument(
            "--consent", metavar="FILE.md", help="set the batch's consent text from a Markdown file"
        )
        parser.add_argument(
            "--instructions", metavar="FILE.md", help="set the batch's instructions from a Markdown file"
        )
        add_link_options(parser, days=DEFAULT_STUDY_DAYS)

    def handle(self, *args, **options):
        batch = batch_named(options["batch"])
        texts = {"consent_text": _text(options["consent"]), "instructions": _text(options["instructions"])}
        try:
            link, token = study_link_create(
                batch=batch,
                platform=options["platform"],
                quota=options["quota"],
                completion_code=options["completion_code"],
                completion_url=options["completion_url"],
                screen_out_code=options["screen_out_code"],
                no_consent_code=options["no_consent_code"],
                max_minutes=options["minutes"],
                days=options["days"],
            )
        except LinkError as exc:
            raise CommandError(str(exc)) from None
        changed = [field for field, text in texts.items() if text is not None]
        for field in changed:
            setattr(batch, field, texts[field])
        if changed:
            batch.save(update_fields=changed)
        self.stdout.write(study_url(token, link.platform, link_base(self, options)))
        self.stderr.write(
            f"{PLATFORMS[link.platform].label} study link for {batch.name}: up to {counted(link.quota, 'item', 'items')} per worker"
            f"{f', {link.max_minutes} minutes' if link.max_minutes else ''}, completion code {link.completion_code}, "
            f"expires {link.expires_at:%Y-%m-%d %H:%M} UTC. Shown once: only its hash is stored."
        )
        if not batch_has_free_slot(batch=batch):
            self.stderr.write(self.style.WARNING(f"Warning: {FULL_WARNING.format(batch=batch.name)}"))
