"""Ids people read and compare must show every character they hold: no invisible format characters."""

from __future__ import annotations

import unicodedata


def invisible_character(value: str) -> str | None:
    """The problem with an id holding an invisible format character (Unicode category Cf: bidi
    overrides and isolates, zero-width spaces and joiners, the BOM, soft hyphen), else None.

    A right-to-left override shows ``abc\\u202edcba`` as ``abcabcd``, and a zero-width space makes
    two ids look identical, so an exported row could not be matched to what the page showed.

    >>> invisible_character("route-12") is None
    True
    >>> invisible_character("route\\u200b-12")
    'contains U+200B ZERO WIDTH SPACE, an invisible character that can hide or reorder what the id shows; remove it'
    """
    if value.isascii():  # every format character lies outside ASCII
        return None
    for ch in value:
        if unicodedata.category(ch) == "Cf":
            name = unicodedata.name(ch, "format character")
            return f"contains U+{ord(ch):04X} {name}, an invisible character that can hide or reorder what the id shows; remove it"
    return None
