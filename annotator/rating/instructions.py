"""The batch's instructions as the rating page and the study's instructions page show them."""

from __future__ import annotations

import json
from functools import lru_cache

from annotator.markdown_text import markdown_html
from annotator.models import Batch
from hcs.rubric import Rubric
from hcs.rubric_markdown import render_instructions


def instructions_html(batch: Batch):
    """The batch's instructions as safe HTML; the rubric's guidance and examples by default."""
    return (
        markdown_html(batch.instructions)
        if batch.instructions
        else _rubric_instructions_html(batch.rubric_text)
    )


@lru_cache(maxsize=64)
def _rubric_instructions_html(rubric_text: str):
    """The rubric's own guidance and examples as HTML: the same for every page of a batch."""
    return markdown_html(render_instructions(Rubric.from_dict(json.loads(rubric_text))))
