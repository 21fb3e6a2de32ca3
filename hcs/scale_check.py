"""Does a judge prompt's own wording agree with the direction of its declared scale?

The G-Eval pairwise template scores each dimension 1–5 with 5 best, yet its "Quality Standards" say
``**Score 1**: Excellent`` and ``**Score 5**: Very Poor``. A judge that follows the standards gives
inverted scores. ``scale_conflicts`` finds score levels the text names with a quality word and reports
any that contradict the declared direction, so the conflict is flagged before a call is paid for.

>>> scale_conflicts("- **Score 1**: Excellent - Exceeds expectations", JudgeScale.parse("1-5"))
['the text says 1 = Excellent, but the declared scale 1–5 makes 1 the worst end']
>>> scale_conflicts("- **4 (Excellent)** → fully compliant", JudgeScale.parse("1-4"))
[]
"""

from __future__ import annotations

import re

from hcs.judge_output import JudgeScale

GOOD = ("excellent", "outstanding", "perfect", "perfectly", "very good", "best")
BAD = ("very poor", "poor", "bad", "worst", "inadequate", "terrible")
_WORDS = "|".join(sorted((re.escape(w) for w in GOOD + BAD), key=len, reverse=True))
_LEVEL = re.compile(
    r"(?:\bscore\s*)?(?<![\d.])(-?\d+(?:\.\d+)?)\s*\**\s*(?:[(:=\u2192]|-(?!\d)|\u2013)\s*\**\s*\(?\s*("
    + _WORDS
    + r")\b",
    re.IGNORECASE,
)


def scale_conflicts(text: str, scale: JudgeScale) -> list[str]:
    """Each place the text puts a good word on the declared worst end, or a bad word on the best end."""
    best, worst = (scale.max, scale.min) if scale.higher_is_better else (scale.min, scale.max)
    found = []
    for match in _LEVEL.finditer(text or ""):
        value, word = float(match.group(1)), match.group(2)
        good = word.lower() in GOOD
        if (good and value == worst) or (not good and value == best):
            end = "worst" if value == worst else "best"
            message = f"the text says {value:g} = {word}, but the declared scale {scale.label} makes {value:g} the {end} end"
            if message not in found:
                found.append(message)
    return found
