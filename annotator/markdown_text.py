"""Researcher-written Markdown (consent texts, instructions) turned into safe HTML.

markdown-it-py with raw HTML disabled: every ``<`` in the text is escaped, and its link checker
refuses ``javascript:``, ``vbscript:``, ``file:`` and ``data:`` URLs, so no script can get in
through a consent text or an instruction. Tables (GFM) are on for rubric-style guidance.
"""

from __future__ import annotations

from functools import lru_cache

from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

_md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("table")


@lru_cache(maxsize=128)
def markdown_html(text: str) -> SafeString:
    return mark_safe(_md.render(text or ""))
