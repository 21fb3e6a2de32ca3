"""A judge card as one self-contained HTML file or one JSON object (for a paper's appendix)."""

from __future__ import annotations

import json

from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.safestring import mark_safe

from annotator.judges.selectors.card import JudgeCard
from annotator.reports.exports.html_export import inline_css
from annotator.reports.exports.json_export import clean


def judge_card_json(card: JudgeCard) -> str:
    return json.dumps(clean(card.to_json()), indent=2, ensure_ascii=False, allow_nan=False)


def judge_card_html(card: JudgeCard) -> str:
    return render_to_string(
        "annotator/judge_card_export.html",
        {"card": card, "css": mark_safe(inline_css()), "generated_at": timezone.now()},
    )


CARD_EXPORTS = {
    "json": ("application/json", judge_card_json),
    "html": ("text/html; charset=utf-8", judge_card_html),
}
