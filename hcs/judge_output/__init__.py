"""Reading scores out of what an LLM judge actually wrote, and mapping judge scales onto the rubric's.

Judges answer in many shapes: a bare JSON object, JSON inside prose or a ```json fence, one nested
object per dimension (``{"accuracy": {"score": 4, "reasoning": ...}}``), a single named verdict
(``{"User frustration": {"score": 0.3, "reason": ...}}``), a custom verdict key
(``{"answer_relevance": 0.7, "reason": ...}``), or a plain line ``Score: 0.8``.

A reply is read for what it says: a template scoring several dimensions gets a score only for each
dimension the reply names (one bare number is not five judgements), an example the prompt showed is
not the judge's answer, a list of the scale echoed back is not a verdict, and two different labelled
verdicts make the reply ``ambiguous`` (``AmbiguousOutput``) instead of one of them being stored.

>>> parse_score('Here is my verdict: {"score": 0.8, "reason": "Mostly right."}').value
0.8
>>> parse_score("<think>Maybe Score: 0.2?</think> Score: 0.9").value
0.9
>>> rule8 = OutputSpec(scale=JudgeScale.parse("1-4"), labels={"Excellent": 4, "Very Good": 3, "Good": 2, "Bad": 1})
>>> parse_score("**3 (Very Good)** \u2192 Correct focus, minor wording.", spec=rule8)
ParsedScore(value=3.0, reason='Correct focus, minor wording.')
>>> JudgeScale.parse("0-1").to_rubric(0.5)
3.0
>>> JudgeScale.parse("1-4", higher_is_better=False).to_rubric(1)
5.0

The package reads in steps: ``values`` (what a score is, the errors, the judge's scale), ``extract`` (the
answer without its reasoning, the JSON in it), ``scores`` (a score from a JSON object), ``plain`` (a
score from plain text), ``verdict`` (a pairwise verdict). Its public names are all here.
"""

from hcs.judge_output.extract import ECHOED, answer_text, example_objects, extract_json, strip_thinking
from hcs.judge_output.scores import parse_all_scores, parse_named_scores, parse_score
from hcs.judge_output.values import (
    AMBIGUOUS_MARK,
    LABEL_KEY,
    REASON_KEYS,
    SCORE_KEYS,
    AmbiguousOutput,
    JudgeOutputError,
    JudgeScale,
    OutputSpec,
    ParsedScore,
    is_ambiguous,
    normalize_key,
    parse_labels,
    read_value,
)
from hcs.judge_output.verdict import (
    WINNERS,
    ParsedVerdict,
    normalize_winner,
    parse_confidence,
    parse_verdict,
)

__all__ = [
    "AMBIGUOUS_MARK",
    "ECHOED",
    "LABEL_KEY",
    "REASON_KEYS",
    "SCORE_KEYS",
    "WINNERS",
    "AmbiguousOutput",
    "JudgeOutputError",
    "JudgeScale",
    "OutputSpec",
    "ParsedScore",
    "ParsedVerdict",
    "answer_text",
    "example_objects",
    "extract_json",
    "is_ambiguous",
    "normalize_key",
    "normalize_winner",
    "parse_all_scores",
    "parse_confidence",
    "parse_labels",
    "parse_named_scores",
    "parse_score",
    "parse_verdict",
    "read_value",
    "strip_thinking",
]
