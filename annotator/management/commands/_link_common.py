"""What the commands share: finding batches by name (or id), and the link commands' --base-url / --days
options."""

from __future__ import annotations

from django.core.management.base import CommandError

from annotator.models import Batch


def batch_named(name: str) -> Batch:
    batch = Batch.objects.filter(name=name).first()
    if batch is None:
        known = ", ".join(Batch.objects.order_by("name").values_list("name", flat=True)[:20]) or "none yet"
        raise CommandError(f"No batch named {name!r}. Batches: {known}.")
    return batch


def batch_named_or_numbered(text: str) -> Batch:
    """The batch named ``text`` or, when none is and ``text`` is a number, the batch of that id."""
    found = Batch.objects.filter(name=text).first()
    if found is None and text.isdigit():
        found = Batch.objects.filter(pk=int(text)).first()
    if found is None:
        names = ", ".join(Batch.objects.order_by("name").values_list("name", flat=True)[:20]) or "none"
        raise CommandError(f"No batch named {text!r}. Batches: {names}.")
    return found


def add_link_options(parser, *, days: int) -> None:
    parser.add_argument(
        "--days", type=int, default=days, help=f"days until the link expires (default {days})"
    )
    parser.add_argument(
        "--base-url", default=None, help="the site's address the link starts with (default SITE_URL)"
    )
