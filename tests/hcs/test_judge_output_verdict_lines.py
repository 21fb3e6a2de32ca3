"""Plain-text verdicts as judges write them: rule 8's labelled lines, reasoning blocks, a judge that
reconsiders. The strings are the ones the defects were reported with."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from hcs.judge_output import (
    AmbiguousOutput,
    JudgeOutputError,
    JudgeScale,
    OutputSpec,
    is_ambiguous,
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


# ------------------------------------------------------------------ the scale echoed back, then the verdict

SCALE_LINES = [line for line in RULE8["prompt"].splitlines() if line.startswith("- **")]
# The seed's rubric as the prompt shows it, wrapped lines included (they are indented continuations).
SEED_LIST = RULE8["prompt"].split("Scoring rules (numeric, REQUIRED):\n")[1].split("\n\n")[0]


@pytest.mark.parametrize(
    "text",
    [
        # the defect as reported: the scale listed first, then the verdict inline
        "- **1 (Bad)** \u2192 Misaligned.\n- **2 (Good)** \u2192 Generic.\n\n"
        "My verdict: **2 (Good)** \u2192 Names timing, but the fix is generic.",
        SEED_LIST + "\n\nMy verdict: **2 (Good)** \u2192 Names timing, but the fix is generic.",
        SEED_LIST + "\nFinal verdict: 2 (Good) - Names timing, but the fix is generic.",
        # without bullets, and with the verdict's own line right after the list
        "\n".join(line[2:] for line in SCALE_LINES)
        + "\n**2 (Good)** \u2192 Names timing, but the fix is generic.",
        # the verdict first, the scale listed after it for reference
        "**2 (Good)** \u2192 Names timing, but the fix is generic.\n\n" + SEED_LIST,
    ],
)
def test_the_verdict_is_read_past_the_rubric_echoed_back(text):
    parsed = parse_score(text, spec=SPEC)
    assert (parsed.value, parsed.reason) == (2, "Names timing, but the fix is generic.")


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (
            "**3 (Very Good)** \u2192 Correct focus.\n\nMy verdict: **2 (Good)** \u2192 Generic.",
            "“3 (Very Good)”, “2 (Good)”",
        ),
        (
            "My verdict: **2 (Good)** \u2192 Generic.\n**3 (Very Good)** \u2192 Correct focus.",
            "“2 (Good)”, “3 (Very Good)”",
        ),
        (SEED_LIST + "\n\nVerdict: Very Good\nScore: 2", "“Very Good”, “2”"),
        ("Score: 3 (Very Good)\nOn reflection:\nBad. It ignores timing.", "“3 (Very Good)”, “Bad”"),
    ],
)
def test_two_different_labelled_verdicts_are_ambiguous_never_the_first(text, shown):
    with pytest.raises(AmbiguousOutput) as caught:
        parse_score(text, spec=SPEC)
    message = str(caught.value)
    assert is_ambiguous(message) and message.startswith("ambiguous: ")
    assert f"2 different verdicts outside a list of the scale ({shown}); none is taken" in message


def test_the_same_verdict_twice_is_not_ambiguous_and_prose_is_not_a_verdict():
    assert parse_score("**3 (Very Good)** \u2192 Fine.\nVerdict: Very Good", spec=SPEC).value == 3
    # "the rating is good" is prose, not the label Good
    parsed = parse_score("**3 (Very Good)** \u2192 The rating is good overall; wording slips.", spec=SPEC)
    assert (parsed.value, parsed.reason) == (3, "The rating is good overall; wording slips.")
    # unlabelled score lines keep the last word (a judge that reconsiders)
    assert parse_score("Score: 2\nOn reflection it is better.\nScore: 3", spec=SPEC).value == 3


def test_a_reply_that_only_lists_the_scale_is_unreadable_with_the_reason():
    with pytest.raises(
        JudgeOutputError, match="lists the scale .* but gives no verdict of its own"
    ) as caught:
        parse_score(SEED_LIST, spec=SPEC)
    assert not is_ambiguous(str(caught.value))


def test_a_structured_answer_whose_label_disagrees_with_its_score_is_unreadable():
    assert parse_score('{"reason": "r", "score": 3, "label": "Very Good"}', spec=SPEC).value == 3
    with pytest.raises(
        JudgeOutputError, match=r"3 is labelled “Good”, which is 2 .* number and label disagree"
    ):
        parse_score('{"reason": "r", "score": 3, "label": "Good"}', spec=SPEC)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        # a line introducing the echoed scale is the list's heading, not the judge's reason
        (
            "Rubric recap:\n" + SEED_LIST + "\n\nMy verdict: **2 (Good)** \u2192 The fix is generic.",
            "The fix is generic.",
        ),
        # text before the verdict stays, without the verdict's closing ** and arrow after it
        (
            "The feedback names timing.\n\n**2 (Good)** \u2192 The fix is generic.",
            "The feedback names timing.\n\nThe fix is generic.",
        ),
    ],
)
def test_the_reason_keeps_no_verdict_markup_and_no_heading_of_the_echoed_scale(text, reason):
    parsed = parse_score(text, spec=SPEC)
    assert (parsed.value, parsed.reason) == (2, reason)
