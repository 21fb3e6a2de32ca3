"""One planned judge call (an item, or a baseline/enhanced pair, with its rendered messages), and the
refusal a run gives, before any call, when prompts cannot be rendered."""

from __future__ import annotations

from dataclasses import dataclass

from annotator.counted import counted
from annotator.judges.engine.templates import TemplateError
from annotator.models import Item

MAX_LISTED = 10  # problems named in a refusal before "and N more"


@dataclass(frozen=True)
class Task:
    item: Item
    enhanced: Item | None
    messages: list[dict[str, str]]
    sample: int = 0  # the n-th of ``--samples`` calls of the same prompt (self-consistency)
    swapped: bool = False  # a pair sent with the enhanced system's response first (the --swap probe)
    key: str = ""  # the response cache's key (annotator.judges.engine.cache.request_key)


def refusal(problems: list[str], nouns: tuple[str, str], what: str) -> TemplateError:
    """The refusal of a run whose ``problems`` are one per item (or pair): ``nouns`` = (singular, plural)."""
    shown = problems[:MAX_LISTED]
    more = f"\n  ... and {len(problems) - MAX_LISTED} more" if len(problems) > MAX_LISTED else ""
    return TemplateError(
        f"{counted(len(problems), *nouns)} {what}; nothing was called:\n  " + "\n  ".join(shown) + more
    )
