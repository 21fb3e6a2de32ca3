"""``{{ n|counted:"item,items" }}``: a count with its noun in the right number, as ``annotator.counted`` says it."""

from __future__ import annotations

from django import template

from annotator.counted import counted as _counted

register = template.Library()


@register.filter
def counted(n, nouns: str) -> str:
    """``nouns`` is "singular,plural"; the count is written as ``annotator.counted.counted`` writes it."""
    singular, plural = nouns.split(",")
    return _counted(int(n), singular, plural)
