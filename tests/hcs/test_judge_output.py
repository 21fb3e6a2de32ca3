"""Reading judge scores out of text shaped like the seeds' judge outputs."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hcs.judge_output import (
    JudgeOutputError,
    JudgeScale,
    OutputSpec,
    example_objects,
    extract_json,
    is_ambiguous,
    normalize_key,
    parse_all_scores,
    parse_named_scores,
    parse_score,
    parse_verdict,
)

# The frustration rule's own example output (online_evaluation_rules_llm_judge.md, rule 10), fenced.
FRUSTRATION = """```json
{
    "User frustration": {
        "score": 0.3,
        "reason": "The score is 0.3 because the User gently redirects the LLM response once."
    }
}
```"""

# The G-Eval template's output format with numbers filled in (geval_pairwise_judge_template.md).
GEVAL = """Let me think step by step about both responses.

```json
{
  "accuracy": {"score": 4, "reasoning": "Facts are right.", "evidence": ["Take the A9"]},
  "completeness": {"score": 3, "reasoning": "Misses the rain.", "evidence": []},
  "clarity": {"score": 5, "reasoning": "Clear steps.", "evidence": []},
  "actionability": {"score": 4, "reasoning": "Usable.", "evidence": []},
  "relevance": {"score": 2, "reasoning": "Tangents.", "evidence": []},
  "overall": {"baseline_score": 3, "enhanced_score": 4, "winner": "enhanced", "confidence": 0.8}
}
```

**Overall winner determination:** the enhanced response."""


def test_json_alone():
    parsed = parse_score('{"score": 0.8, "reason": "The output answers the intent."}')
    assert parsed.value == 0.8
    assert parsed.reason == "The output answers the intent."


def test_json_inside_prose_with_stray_braces_first():
    text = 'The template says {input} was given. Verdict: {"score": 1.0, "reason": "Greeting only."} Done.'
    assert parse_score(text).value == 1.0
    assert parse_score(text).reason == "Greeting only."


def test_fenced_frustration_rule_output():
    parsed = parse_score(FRUSTRATION)
    assert parsed.value == 0.3
    assert parsed.reason.startswith("The score is 0.3 because")
    # Asking for the dimension by its name, in another spelling, finds the same object.
    assert parse_score(FRUSTRATION, dimension="user_frustration").value == 0.3


def test_geval_nested_per_dimension():
    assert parse_score(GEVAL, dimension="accuracy").value == 4.0
    assert parse_score(GEVAL, dimension="Relevance").reason == "Tangents."
    scores = parse_all_scores(GEVAL, ["accuracy", "completeness", "clarity", "actionability", "relevance"])
    assert [s.value for s in scores.values()] == [4, 3, 5, 4, 2]


def test_geval_without_dimension_is_ambiguous():
    with pytest.raises(JudgeOutputError, match="several dimensions"):
        parse_score(GEVAL)


def test_geval_unknown_dimension_lists_keys():
    with pytest.raises(JudgeOutputError, match=r"no score for dimension 'fluency'.*accuracy"):
        parse_score(GEVAL, dimension="fluency")


def test_geval_overall_block_has_no_single_score():
    with pytest.raises(JudgeOutputError, match=r"'overall' has no score"):
        parse_score(GEVAL, dimension="overall")


def test_reference_answer_template_verdict_key():
    # The reference-answer template returns {"{VERDICT_KEY}": score, "{REASON_KEY}": reason}.
    text = '{"answer_relevance": 0.7, "explanation_of_score": "Close to the expected answer."}'
    parsed = parse_score(text, verdict_key="answer_relevance", reason_key="explanation_of_score")
    assert parsed.value == 0.7
    assert parsed.reason == "Close to the expected answer."
    # Without naming the key, the verdict key of the only dimension is found via the dimension name.
    assert parse_score(text, dimension="answer_relevance").value == 0.7


def test_plain_text_score_line():
    assert parse_score("Score: 0.6\nThe output partially answers the question.").value == 0.6
    parsed = parse_score("0.9 - The output fully answers the question.")
    assert (parsed.value, parsed.reason) == (0.9, "The output fully answers the question.")
    assert parse_score("3").value == 3.0


def test_numbered_prose_is_not_a_score():
    with pytest.raises(JudgeOutputError, match="no JSON object and no 'score: N'"):
        parse_score("1. The response is clear.\n2. It misses context.")


def test_empty_output():
    with pytest.raises(JudgeOutputError, match="empty"):
        parse_score("   ")


def test_non_numeric_score():
    with pytest.raises(JudgeOutputError, match=r"'score' is 'high', not a number"):
        parse_score('{"score": "high", "reason": "x"}')


def test_boolean_score_is_rejected():
    with pytest.raises(JudgeOutputError, match="not a number"):
        parse_score('{"score": true}')


def test_numeric_string_score_is_read():
    assert parse_score('{"score": "4"}').value == 4.0


def test_extract_json_none():
    with pytest.raises(JudgeOutputError, match="no JSON object"):
        extract_json("no braces here")


def test_verdict_from_geval():
    verdict = parse_verdict(GEVAL)
    assert verdict.winner == "enhanced"
    assert verdict.confidence == 0.8
    assert (verdict.baseline_score, verdict.enhanced_score) == (3.0, 4.0)


def test_verdict_bad_winner():
    with pytest.raises(JudgeOutputError, match="winner is 'both'"):
        parse_verdict('{"overall": {"winner": "both", "confidence": 0.5}}')


def test_verdict_confidence_range():
    with pytest.raises(JudgeOutputError, match="confidence 1.5 is outside 0–1"):
        parse_verdict('{"winner": "tie", "confidence": 1.5}')


@pytest.mark.parametrize(
    ("spec", "higher", "raw", "mapped"),
    [
        ("0-1", True, 0.0, 1.0),
        ("0-1", True, 1.0, 5.0),
        ("0-1", True, 0.25, 2.0),
        ("1-4", True, 4, 5.0),
        ("1-4", True, 2, 1 + 4 / 3),
        ("1-5", True, 3, 3.0),
        # The frustration rule: higher is more frustrated, so 1.0 is the worst end.
        ("0-1", False, 1.0, 1.0),
        ("0-1", False, 0.3, 1 + 0.7 * 4),
        # The G-Eval "Quality Standards": 1 = Excellent.
        ("1-5", False, 1, 5.0),
    ],
)
def test_scale_mapping(spec, higher, raw, mapped):
    assert JudgeScale.parse(spec, higher_is_better=higher).to_rubric(raw) == pytest.approx(mapped)


def test_scale_out_of_range():
    with pytest.raises(JudgeOutputError, match="score 1.2 is outside the declared scale 0–1"):
        JudgeScale.parse("0-1").to_rubric(1.2)


@pytest.mark.parametrize("spec", ["1", "5-1", "a-b", "1-1"])
def test_scale_spec_errors(spec):
    with pytest.raises(ValueError, match="scale"):
        JudgeScale.parse(spec)


def test_scale_label():
    assert JudgeScale.parse("0-1", higher_is_better=False).label == "0–1, lower is better"


# ------------------------------------------------------------------ any text: a score or a clear error

json_values = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=True) | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200), st.sampled_from([None, "overall", "coherence", "User frustration"]))
def test_any_text_gives_a_score_or_a_judge_output_error(text, dimension):
    try:
        parsed = parse_score(text, dimension=dimension)
    except JudgeOutputError:
        return
    assert isinstance(parsed.value, float)


@settings(max_examples=300, deadline=None)
@given(json_values, st.sampled_from(["", "Verdict: ", "```json\n"]))
def test_any_json_gives_a_score_or_a_judge_output_error(value, prefix):
    import json
    import math

    text = prefix + json.dumps(value)
    try:
        parsed = parse_score(text, dimension="coherence")
    except JudgeOutputError:
        return
    assert math.isfinite(parsed.value)
    try:
        parse_verdict(text)
    except JudgeOutputError:
        pass


def test_a_number_too_large_for_a_float_is_refused():
    with pytest.raises(JudgeOutputError, match="not a finite number"):
        parse_score("9" * 400)


def test_a_huge_json_integer_is_refused_not_crashed():
    with pytest.raises(JudgeOutputError, match=r"'score' is 9999.*\.\.\., not a finite number"):
        parse_score('{"score": ' + "9" * 400 + "}")


# ------------------------------------------------------------------ several dimensions: only those named

DIMS = ("coherence", "fluency", "relevance")
ONE_TO_FIVE = OutputSpec(scale=JudgeScale.parse("1-5"))


def test_one_bare_score_is_not_a_score_for_every_dimension():
    for text in ('{"score": 4}', '{"score": 4, "reason": "Good."}', "Score: 4", "4"):
        with pytest.raises(JudgeOutputError, match=r"names none of the 3 dimensions .*coherence, fluency"):
            parse_named_scores(text, DIMS)
    with pytest.raises(JudgeOutputError, match="names none"):
        parse_all_scores('{"score": 4}', DIMS)


def test_a_reply_naming_some_dimensions_scores_only_those():
    scores, problems = parse_named_scores(
        '{"coherence": {"score": 4, "reasoning": "Flows."}, "score": 2}', DIMS
    )
    assert {d: s.value for d, s in scores.items()} == {"coherence": 4.0}
    assert scores["coherence"].reason == "Flows."
    assert problems == [
        ("fluency", "the judge output gives no score for 'fluency'"),
        ("relevance", "the judge output gives no score for 'relevance'"),
    ]
    # a single nested verdict under another name is not borrowed for the dimensions it does not name
    scores, _ = parse_named_scores('{"Coherence": 5, "User frustration": {"score": 0.3}}', DIMS)
    assert set(scores) == {"coherence"}


def test_plain_lines_name_their_dimensions():
    scores, problems = parse_named_scores(
        "- **Coherence**: 4 - flows well\nFluency: 3\nrelevance = 5/5", DIMS, spec=ONE_TO_FIVE
    )
    assert {d: s.value for d, s in scores.items()} == {"coherence": 4, "fluency": 3, "relevance": 5}
    assert scores["coherence"].reason == "flows well" and problems == []
    scores, problems = parse_named_scores("coherence: 4\nfluency: 3\ncoherence: 2", DIMS)
    assert set(scores) == {"fluency"}
    (coherence,) = [e for d, e in problems if d == "coherence"]
    assert is_ambiguous(coherence) and "2 different scores (2, 4)" in coherence


@settings(max_examples=300, deadline=None)
@given(json_values, st.sampled_from(["", "Verdict: ", "```json\n"]))
def test_no_dimension_is_scored_unless_the_reply_names_it(value, prefix):
    import json

    try:
        scores, problems = parse_named_scores(prefix + json.dumps(value), DIMS)
    except JudgeOutputError:
        return
    named = {normalize_key(k) for k in value} if isinstance(value, dict) else set()
    assert set(scores) <= named and set(scores) | {d for d, _ in problems} == set(DIMS)


# ------------------------------------------------------------------ reasons and examples are not lost


def test_a_reason_under_the_judges_own_key_is_kept():
    # the reference-answer template asks for answer_match and reason; this judge wrote match and why
    parsed = parse_score('{"match": 0.9, "why": "Same time, other words."}', verdict_key="answer_match")
    assert (parsed.value, parsed.reason) == (0.9, "Same time, other words.")
    parsed = parse_score('{"score": 0.4, "strengths": "Right day.", "weaknesses": "Wrong hour."}')
    assert parsed.reason == "strengths: Right day.; weaknesses: Wrong hour."
    assert parse_score('{"score": 0.4, "reasoning": "Known key first.", "note": "x"}').reason == (
        "Known key first."
    )


# The reference-answer template's own few-shot example (fixtures/judge_templates/reference_answer.json).
EXAMPLE = '{"answer_match": 1.0, "reason": "The response gives the Sunday opening time of 10 AM."}'
REFERENCE = OutputSpec(
    scale=JudgeScale.parse("0-1"),
    verdict_key="answer_match",
    reason_key="reason",
    examples=example_objects("###FEW-SHOT EXAMPLES###\n\nResult: " + EXAMPLE + "\n\n###INPUTS:###"),
)


@pytest.mark.parametrize(
    "text",
    [
        '{"answer_match": 0.4, "reason": "Right day, wrong hour."}\n\nAs in the example: Result: ' + EXAMPLE,
        '```json\n{"answer_match": 0.4, "reason": "Right day, wrong hour."}\n```\nFor reference:\n```json\n'
        + EXAMPLE
        + "\n```",
        'Result: {"answer_match": 0.4,\n "reason": "Right day, wrong hour."}\nExample:\n'
        + json.dumps(json.loads(EXAMPLE), indent=2),
    ],
)
def test_an_example_echoed_after_the_answer_does_not_beat_it(text):
    parsed = parse_score(text, spec=REFERENCE)
    assert (parsed.value, parsed.reason) == (0.4, "Right day, wrong hour.")
    assert parse_score(text).value == 1.0  # without the template's examples the last object wins


def test_a_reply_that_only_echoes_the_example_is_refused_with_the_reason():
    for text in (EXAMPLE, "Result: " + EXAMPLE, "```json\n" + EXAMPLE + "\n```"):
        with pytest.raises(JudgeOutputError, match="only repeats an example shown in the prompt"):
            parse_score(text, spec=REFERENCE)
    # a plain-text verdict beside the echoed example is read, and the example's words are not
    assert parse_score("Score: 0.3\nExample given: " + EXAMPLE, spec=REFERENCE).value == 0.3


def test_the_examples_are_the_json_objects_of_the_template_text():
    assert example_objects('Return {"score": <1-5>} as in {"score": 3, "reason": "x"}', "{input}") == {
        '{"reason": "x", "score": 3}'
    }
