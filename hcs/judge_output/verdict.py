"""Reading a pairwise verdict: which of two outputs won, and how sure the judge is."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hcs.judge_output.extract import answer_text, extract_json
from hcs.judge_output.values import JudgeOutputError, _number, normalize_key

WINNERS = ("baseline", "enhanced", "tie")


@dataclass(frozen=True)
class ParsedVerdict:
    winner: str
    confidence: float | None
    baseline_score: float | None = None
    enhanced_score: float | None = None


def parse_verdict(text: str, examples: frozenset[str] = frozenset()) -> ParsedVerdict:
    """The pairwise verdict of the G-Eval template: ``overall.winner`` and ``overall.confidence``.
    ``examples``: the prompt's own JSON objects (``example_objects``), which are not the verdict."""
    obj = extract_json(answer_text(text), examples)
    if not isinstance(obj, dict):
        raise JudgeOutputError("the judge output is not a JSON object")
    keys = {normalize_key(k): k for k in obj}
    block = obj[keys["overall"]] if "overall" in keys and isinstance(obj[keys["overall"]], dict) else obj
    inner = {normalize_key(k): v for k, v in block.items()}
    if "winner" not in inner:
        raise JudgeOutputError("the judge output has no 'winner'")
    winner = normalize_winner(inner["winner"])
    confidence = inner.get("confidence")
    return ParsedVerdict(
        winner=winner,
        confidence=None if confidence is None else parse_confidence(confidence),
        baseline_score=None
        if inner.get("baseline_score") is None
        else _number(inner["baseline_score"], "baseline_score"),
        enhanced_score=None
        if inner.get("enhanced_score") is None
        else _number(inner["enhanced_score"], "enhanced_score"),
    )


def normalize_winner(value: Any) -> str:
    winner = str(value).strip().lower()
    if winner not in WINNERS:
        raise JudgeOutputError(f"winner is {value!r}; expected baseline, enhanced or tie")
    return winner


def parse_confidence(value: Any) -> float:
    number = _number(value, "confidence")
    if not 0.0 <= number <= 1.0:
        raise JudgeOutputError(f"confidence {number:g} is outside 0–1")
    return number
