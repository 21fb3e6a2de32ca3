"""python manage.py invite_link BATCH [BATCH ...] [--uses N] [--days D]: print an invite link.

Whoever opens it chooses a username and password and becomes an annotator of those batches only.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotator.cli import add_link_options, batch_named, link_base
from annotator.counted import counted
from annotator.studies.link_urls import invite_url
from annotator.studies.services.links import DEFAULT_INVITE_DAYS, LinkError, invite_create


class Command(BaseCommand):
    help = "Make an invite link for one or more batches and print it (shown once; only its hash is stored)."

    def add_arguments(self, parser):
        parser.add_argument("batch", nargs="+", help="batch name(s)")
        parser.add_argument(
            "--uses", type=int, default=1, help="how many accounts the link may make (default 1)"
        )
        add_link_options(parser, days=DEFAULT_INVITE_DAYS)

    def handle(self, *args, **options):
        batches = [batch_named(name) for name in options["batch"]]
        try:
            invite, token = invite_create(batches=batches, uses=options["uses"], days=options["days"])
        except LinkError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(invite_url(token, link_base(self, options)))
        accounts = counted(invite.max_uses, "account", "accounts")
        self.stderr.write(
            f"Invite for {', '.join(b.name for b in batches)}: up to {accounts}, "
            f"expires {invite.expires_at:%Y-%m-%d %H:%M} UTC."
        )
