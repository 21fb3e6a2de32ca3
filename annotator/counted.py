"""A count with its noun in the right number ("1 item", "2 items"), for messages whose count varies."""

from __future__ import annotations

from django.utils.translation import ngettext


def counted(n: int, singular: str, plural: str, *, grouped: bool = False) -> str:
    """``n`` and the noun that agrees with it; ``grouped`` writes thousands with commas (1,234)."""
    number = f"{n:,}" if grouped else str(n)
    return f"{number} {ngettext(singular, plural, n)}"
