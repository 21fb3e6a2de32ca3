"""Plain-text verdicts as judges write them: rule 8's labelled lines, reasoning blocks, a judge that
reconsiders. The strings are the ones the defects were reported with."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from hcs.judge_output import (
    JudgeOutputError,
    JudgeScale,
    OutputSpec,
    parse_score,
    parse_verdict,
    strip_thinking,
)

RULE8_FILE = (
    Path(__file__).resolve().parents[2]
    / "fixtures"
    / "judge_templates"
    / "studio_live_coach_feedback_quality.json"
)
RULE8 = json.loads(RULE8_FILE.read_text(encoding="utf-8"))
SPEC = OutputSpec(scale=JudgeScale.parse(RULE8["scale"]), labels=RULE8["labels"])


def test_the_seed_rubric_prints_each_verdict_in_a_form_that_is_read():
    lines = [line for line in RULE8["prompt"].splitlines() if re.match(r"- \*\*\d \(", line)]
    assert len(lines) == 4  # Excellent, Very Good, Good, Bad, as the seed writes them
    for line in lines:
        number = int(re.search(r"\d", line).group())
        parsed = parse_score(line, spec=SPEC)
        assert parsed.value == number and parsed.reason and not parsed.reason.startswith(("→", "*"))


@pytest.mark.parametrize(
    ("text", "value", "reason"),
    [
        (
            "**3 (Very Good)** → Correct metric focus and actionable fix, with minor wording issues.",
            3,
            "Correct metric focus and actionable fix, with minor wording issues.",
        ),
        (
            "3 (Very Good) - Correct metric focus, minor format issues.",
            3,
            "Correct metric focus, minor format issues.",
        ),
        (
            "Very Good. The fix targets timing but runs past 30 words.",
            3,
            "The fix targets timing but runs past 30 words.",
        ),
        ("Excellent: precise, immediately usable fix.", 4, "precise, immediately usable fix."),
        ("Good - generic advice.", 2, "generic advice."),  # "Good", not the start of "Very Good"
        ("Score: 4 (Excellent)\nFully compliant.", 4, "Fully compliant."),
    ],
)
def test_rule_8_labelled_verdicts_are_read(text, value, reason):
    parsed = parse_score(text, spec=SPEC)
    assert (parsed.value, parsed.reason) == (value, reason)


@pytest.mark.parametrize("text", ["Score: 4 (Bad)", "**4 (Bad)** → misaligned.", '{"score": "4 (Bad)"}'])
def test_a_number_and_a_label_that_disagree_are_unreadable_with_the_reason(text):
    with pytest.raises(JudgeOutputError, match=r"4 is labelled “Bad”, which is 1 on this template's labels"):
        parse_score(text, spec=SPEC)


def test_without_labels_a_parenthesised_word_is_not_checked():
    assert parse_score("Score: 4 (Bad)").value == 4  # no labels declared: nothing to disagree with


def test_reasoning_is_dropped_and_the_last_score_line_wins():
    assert parse_score("<think>Maybe Score: 0.2?</think> Score: 0.9").value == 0.9
    # DeepSeek-R1's chat template opens the block in the prompt: only the closing tag is in the answer
    assert parse_score("Hmm, Score: 0.2 perhaps.</think>\nScore: 0.9").value == 0.9
    assert parse_score("Score: 0.2\nOn reflection the answer is grounded.\nScore: 0.7").value == 0.7
    assert parse_score('<think>{"score": 0.1}</think>{"score": 0.8, "reason": "ok"}').value == 0.8
    # a judge that echoes the rubric before its verdict is read by its verdict
    echoed = (
        "\n".join(line for line in RULE8["prompt"].splitlines() if line.startswith("- **"))
        + "\n\n**2 (Good)** → Generic fix."
    )
    assert parse_score(echoed, spec=SPEC).value == 2


def test_reasoning_without_an_answer_says_so():
    with pytest.raises(JudgeOutputError, match=r"only its reasoning \(<think>…</think>\) and no answer"):
        parse_score("<think>Score: 0.4, I think, but the answer was cut off")
    assert strip_thinking("<think>a</think>b<think>c</think>d") == "bd"


def test_a_pairwise_verdict_after_reasoning():
    text = '<think>{"winner": "baseline", "confidence": 0.3}</think>{"winner": "enhanced", "confidence": 0.9}'
    assert parse_verdict(text).winner == "enhanced"


def test_numbered_lists_and_ranges_are_not_verdicts():
    with pytest.raises(JudgeOutputError, match="no JSON object and no 'score: N'"):
        parse_score("1. Be 1–2 sentences\n2. Reference the metrics.", spec=SPEC)
