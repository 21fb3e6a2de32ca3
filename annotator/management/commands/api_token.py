"""python manage.py api_token USER [--days N] [--name NAME]: make an API token and print its key once."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from annotator.forms.api_tokens import DEFAULT_DAYS
from annotator.selectors.api_tokens import may_hold_api_tokens
from annotator.services.api_tokens import api_token_create


class Command(BaseCommand):
    help = "Create an API token for USER (it has exactly that user's role) and print the key; it is shown only once."

    def add_arguments(self, parser):
        parser.add_argument("user", help="username")
        parser.add_argument(
            "--days", type=int, default=DEFAULT_DAYS, help=f"days until it expires (default {DEFAULT_DAYS})"
        )
        parser.add_argument("--name", default="command line", help="what the token is for")

    def handle(self, *args, user, days, name, **options):
        found = get_user_model().objects.filter(username=user).first()
        if found is None:
            raise CommandError(f"No user named {user!r}.")
        if not may_hold_api_tokens(found):
            raise CommandError(
                f"{user!r} was made by a study, invite or bulk link: such accounts hold no API token."
            )
        try:
            token, key = api_token_create(user=found, name=name, days=days)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stderr.write(
            f"Token {token.prefix}\u2026 for {found.username}, expires {token.expires_at:%Y-%m-%d %H:%M} UTC. "
            "Keep it secret; it is not shown again."
        )
        self.stdout.write(key)
