"""What the commands share: finding batches by name (or id), and the link commands' --base-url / --days
options."""

from __future__ import annotations

from django.core.management.base import CommandError

from annotator.models import Batch
from annotator.studies.link_urls import command_base


def batch_named(name: str) -> Batch:
    batch = Batch.objects.filter(name=name).first()
    if batch is None:
        raise _no_batch(name, none="none yet")
    return batch


def batch_named_or_numbered(text: str) -> Batch:
    """The batch named ``text`` or, when none is and ``text`` is a number, the batch of that id."""
    found = Batch.objects.filter(name=text).first()
    if found is None and text.isdigit():
        found = Batch.objects.filter(pk=int(text)).first()
    if found is None:
        raise _no_batch(text, none="none")
    return found


def _no_batch(text: str, *, none: str) -> CommandError:
    """The refusal naming the first 20 batches there are (``none`` when there is none)."""
    known = ", ".join(Batch.objects.order_by("name").values_list("name", flat=True)[:20]) or none
    return CommandError(f"No batch named {text!r}. Batches: {known}.")


def add_link_options(parser, *, days: int) -> None:
    parser.add_argument(
        "--days", type=int, default=days, help=f"days until the link expires (default {days})"
    )
    parser.add_argument(
        "--base-url", default=None, help="the site's address the link starts with (default SITE_URL)"
    )


def link_base(command, options) -> str | None:
    """The address the command's links start with (``command_base``); its note goes to stderr."""
    base, note = command_base(options["base_url"])
    if note:
        command.stderr.write(command.style.WARNING(note))
    return base
