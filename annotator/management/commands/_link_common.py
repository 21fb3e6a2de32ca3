"""What the link commands share: finding batches by name and the --base-url / --days options."""

from __future__ import annotations

from django.core.management.base import CommandError

from annotator.models import Batch


def batch_named(name: str) -> Batch:
    batch = Batch.objects.filter(name=name).first()
    if batch is None:
        known = ", ".join(Batch.objects.order_by("name").values_list("name", flat=True)[:20]) or "none yet"
        raise CommandError(f"No batch named {name!r}. Batches: {known}.")
    return batch


def add_link_options(parser, *, days: int) -> None:
    parser.add_argument(
        "--days", type=int, default=days, help=f"days until the link expires (default {days})"
    )
    parser.add_argument(
        "--base-url", default=None, help="the site's address the link starts with (default SITE_URL)"
    )
