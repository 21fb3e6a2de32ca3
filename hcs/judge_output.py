"""Reading scores out of what an LLM judge actually wrote, and mapping judge scales onto the rubric's.

Judges answer in many shapes: a bare JSON object, JSON inside prose or a ```json fence, one nested
object per dimension (``{"accuracy": {"score": 4, "reasoning": ...}}``), a single named verdict
(``{"User frustration": {"score": 0.3, "reason": ...}}``), a custom verdict key
(``{"answer_relevance": 0.7, "reason": ...}``), or a plain line ``Score: 0.8``.

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
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

SCORE_KEYS = ("score", "value", "rating", "verdict")
REASON_KEYS = ("reason", "reasoning", "explanation", "rationale", "justification")
WINNERS = ("baseline", "enhanced", "tie")

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)
_NUMBER = r"(-?\d+(?:\.\d+)?)(?:\s*/\s*(\d+(?:\.\d+)?))?"
_LABEL_NOTE = r"[ \t]*\**[ \t]*(?:\(([^()\n]*)\))?"
_LABELLED = re.compile(r"\b(?:score|rating)\b\s*(?:is|[:=])?\s*\**\s*" + _NUMBER + _LABEL_NOTE, re.IGNORECASE)
# "**3 (Very Good)** → ..." or "3 (Very Good) - ..." at a line's start: the seed's rubric prints verdicts so.
_LINE_VERDICT = re.compile(
    r"^[ \t]*(?:[-*\u2022][ \t]+)?\**[ \t]*" + _NUMBER + r"[ \t]*\(([^()\n]*)\)[ \t]*\**[ \t]*"
    r"(?=(?:\u2192|->|[-\u2013\u2014:.])(?:[ \t]|$)|$)",
    re.MULTILINE,
)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_LABELLED_WORD = re.compile(
    r"\b(?:score|rating|verdict)\b\s*(?:is|[:=])?\s*\**\s*([A-Za-z][^\n*.,;]*)", re.IGNORECASE
)
_BARE_NUMBER = re.compile(r"^\s*" + _NUMBER + r"[ \t]*(?:(?:[-–—:]|\n)\s*(.*))?$", re.DOTALL)
_TEXT_NUMBER = re.compile(r"^\s*\**\s*" + _NUMBER + r"\s*\**\s*(?:\(([^()]*)\))?\s*$")


class JudgeOutputError(ValueError):
    """The judge's text holds no score that can be read; the message says what was missing."""


@dataclass(frozen=True)
class ParsedScore:
    value: float
    reason: str = ""


@dataclass(frozen=True)
class ParsedVerdict:
    winner: str
    confidence: float | None
    baseline_score: float | None = None
    enhanced_score: float | None = None


@dataclass(frozen=True)
class OutputSpec:
    """How to read one judge's answers: its scale, verdict and reason keys, and verdict labels."""

    scale: JudgeScale | None = None
    verdict_key: str | None = None
    reason_key: str | None = None
    labels: Mapping[str, float] = field(default_factory=dict)

    def label_value(self, text: str) -> float | None:
        return {normalize_key(k): float(v) for k, v in self.labels.items()}.get(normalize_key(text))


def parse_labels(text: str) -> dict[str, float]:
    """``"Excellent=4, Very Good=3, Good=2, Bad=1"`` as a label map. Raises ValueError naming the bad part."""
    labels: dict[str, float] = {}
    for part in str(text or "").split(","):
        if not part.strip():
            continue
        label, sep, number = part.rpartition("=")
        if not sep or not label.strip():
            raise ValueError(f"`{part.strip()}` is not of the form label=number")
        try:
            labels[label.strip()] = float(number)
        except ValueError:
            raise ValueError(f"`{part.strip()}`: `{number.strip()}` is not a number") from None
    return labels


def read_value(value: Any, spec: OutputSpec, where: str = "the score") -> float:
    """A score cell: a number, a verdict label of ``spec``, or a fraction out of the scale's maximum."""
    return _number(value, where, spec)


def normalize_key(key: str) -> str:
    """``"User frustration"``, ``"user-frustration"`` and ``"user_frustration"`` are the same key."""
    return re.sub(r"[^a-z0-9]+", "_", str(key).strip().lower()).strip("_")


def extract_json(text: str) -> Any:
    """The JSON value in ``text``: the whole text, else the last fenced block that parses, else the last
    top-level object in prose (a judge that echoes the prompt's example before its answer is read by
    its answer). Raises JudgeOutputError when there is none.
    """
    if text is None or not str(text).strip():
        raise JudgeOutputError("the judge output is empty")
    text = str(text)
    # ValueError covers JSONDecodeError and integers past Python's digit limit; RecursionError
    # arrays nested deeper than the parser's recursion limit.
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    found: list[Any] = []
    for block in _FENCE.findall(text):
        try:
            found.append(json.loads(block))
        except (ValueError, RecursionError):
            continue
    if found:
        return found[-1]
    decoder = json.JSONDecoder()
    last, end = None, 0
    for match in re.finditer(r"\{", text):
        if match.start() < end:
            continue
        try:
            value, stop = decoder.raw_decode(text, match.start())
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            last, end = value, stop
    if last is not None:
        return last
    raise JudgeOutputError("no JSON object found in the judge output")


def _fraction(number: float, denominator: str | None, shown: str, scale: JudgeScale | None) -> float:
    if denominator is None:
        return number
    out_of = float(denominator)
    if scale is None or out_of != scale.max:
        expected = f"; this judge's scale is {scale.label}" if scale else ""
        raise JudgeOutputError(f"{shown} is a score out of {out_of:g}{expected}")
    return number


def _number(value: Any, where: str, spec: OutputSpec | None = None) -> float:
    if isinstance(value, bool):
        raise JudgeOutputError(f"{where} is {value!r}, not a number")
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
    scale = spec.scale if spec else None
    try:
        if isinstance(value, (int, float)):
            number = float(value)
        elif isinstance(value, str):
            labelled = spec.label_value(value) if spec and spec.labels else None
            match = _TEXT_NUMBER.match(value)
            if labelled is not None:
                number = labelled
            elif match:
                number = _fraction(float(match.group(1)), match.group(2), f"{where} {shown}", scale)
                label = spec.label_value(match.group(3)) if spec and spec.labels and match.group(3) else None
                if label is not None and label != number:
                    raise JudgeOutputError(
                        f"{where} {shown}: {number:g} is labelled \u201c{match.group(3)}\u201d, "
                        f"which is {label:g} on this template's labels: number and label disagree"
                    )
            else:
                known = f" (labels: {', '.join(spec.labels)})" if spec and spec.labels else ""
                raise JudgeOutputError(f"{where} is {shown}, not a number{known}")
        else:
            raise JudgeOutputError(f"{where} is {type(value).__name__}, not a number")
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise JudgeOutputError(f"{where} is {shown}, not a finite number")
    return number


def _reason(obj: Mapping[str, Any], extra_keys: tuple[str, ...] = ()) -> str:
    keys = {normalize_key(k): k for k in obj}
    for key in (*extra_keys, *REASON_KEYS):
        original = keys.get(normalize_key(key))
        if original is not None and isinstance(obj[original], str):
            return obj[original]
    return ""


def _from_object(obj: Mapping[str, Any], where: str, score_keys, reason_keys, spec) -> ParsedScore | None:
    keys = {normalize_key(k): k for k in obj}
    for key in score_keys:
        original = keys.get(normalize_key(key))
        if original is not None and not isinstance(obj[original], (dict, list)):
            return ParsedScore(
                _number(obj[original], f"{where}{original!r}", spec), _reason(obj, reason_keys)
            )
    return None


def _flat_named(obj: Mapping[str, Any], reason_keys, spec) -> ParsedScore | None:
    """``{"hub_answer_correctness": 0.8, "reason": "..."}``: the one number beside text fields."""
    reasons = {normalize_key(k) for k in (*reason_keys, *REASON_KEYS)}
    others = [k for k in obj if normalize_key(k) not in reasons]
    numbers = [k for k in others if isinstance(obj[k], (int, float)) and not isinstance(obj[k], bool)]
    if len(numbers) == 1 and all(isinstance(obj[k], str) for k in others if k != numbers[0]):
        return ParsedScore(_number(obj[numbers[0]], f"{numbers[0]!r}", spec), _reason(obj, reason_keys))
    return None


def parse_score(
    text: str,
    *,
    dimension: str | None = None,
    verdict_key: str | None = None,
    reason_key: str | None = None,
    spec: OutputSpec | None = None,
) -> ParsedScore:
    """The score (and reason) a judge gave, for ``dimension`` when its output covers several.

    ``spec`` (or ``verdict_key``/``reason_key``) names the keys a template asked for (the reference-answer
    template's ``{VERDICT_KEY}``/``{REASON_KEY}``), its verdict labels and its scale; ``score``, ``value``,
    ``rating`` and ``verdict`` are always tried, then a lone number beside text fields. A fraction is
    read only when its denominator is the scale's maximum (``3/10`` is refused on a 1–5 judge).
    """
    spec = spec or OutputSpec(verdict_key=verdict_key, reason_key=reason_key)
    if text is not None and "think>" in str(text):
        text = strip_thinking(text)
        if not text.strip():
            raise JudgeOutputError(
                "the judge output holds only its reasoning (<think>…</think>) and no answer"
            )
    score_keys = tuple(k for k in (spec.verdict_key, *SCORE_KEYS) if k)
    reason_keys = (spec.reason_key,) if spec.reason_key else ()
    try:
        obj = extract_json(text)
    except JudgeOutputError as exc:
        return _parse_plain(str(text or ""), exc, spec)
    if isinstance(obj, (int, float)) and not isinstance(obj, bool):
        return ParsedScore(_number(obj, "the output", spec))
    if not isinstance(obj, dict):
        raise JudgeOutputError(f"the judge output is a JSON {type(obj).__name__}, not an object with a score")
    keys = {normalize_key(k): k for k in obj}
    if dimension is not None and normalize_key(dimension) in keys:
        original = keys[normalize_key(dimension)]
        inner = obj[original]
        if isinstance(inner, dict):
            found = _from_object(inner, f"{original!r} → ", score_keys, reason_keys, spec)
            if found is None:
                raise JudgeOutputError(
                    f"the object for {original!r} has no score (keys: {', '.join(map(str, inner)) or 'none'})"
                )
            return found
        return ParsedScore(_number(inner, f"{original!r}", spec), _reason(obj, reason_keys))
    found = _from_object(obj, "", score_keys, reason_keys, spec)
    if found is not None:
        return found
    nested = [
        k
        for k, v in obj.items()
        if isinstance(v, dict) and _from_object(v, "", score_keys, (), spec) is not None
    ]
    if len(nested) == 1:
        return _from_object(obj[nested[0]], f"{nested[0]!r} → ", score_keys, reason_keys, spec)
    available = ", ".join(map(str, obj)) or "none"
    if dimension is not None and dimension != "overall":
        raise JudgeOutputError(
            f"no score for dimension {dimension!r} in the judge output (keys: {available})"
        )
    if len(nested) > 1:
        raise JudgeOutputError(f"the judge output scores several dimensions ({available}); name one")
    flat = _flat_named(obj, reason_keys, spec)
    if flat is not None:
        return flat
    raise JudgeOutputError(f"the judge output has no score key (keys: {available})")


def strip_thinking(text: str) -> str:
    """``text`` without a reasoning model's ``<think>…</think>`` blocks, which are not its answer.

    An answer whose opening tag was part of the prompt (DeepSeek-R1's chat template) keeps only what
    follows the last ``</think>``; an unclosed ``<think>`` (a cut-off answer) ends the answer.

    >>> strip_thinking("<think>Maybe Score: 0.2?</think> Score: 0.9")
    ' Score: 0.9'
    >>> strip_thinking("so 0.2 it is</think>Score: 0.9")
    'Score: 0.9'
    """
    text = _THINK.sub("", str(text))
    text = text.rpartition("</think>")[2] if "</think>" in text else text
    start = text.find("<think>")
    return text if start < 0 else text[:start]


@dataclass(frozen=True)
class _Found:
    start: int
    end: int
    number: float | None = None
    denominator: str | None = None
    label: str = ""
    reason: str | None = None  # the text after a bare number, when the whole answer is "N - reason"


def _label_pattern(spec: OutputSpec) -> re.Pattern | None:
    if not spec.labels:
        return None
    names = sorted(spec.labels, key=len, reverse=True)  # "Very Good" before "Good"
    alternatives = "|".join(r"\s+".join(map(re.escape, name.split())) for name in names)
    return re.compile(
        r"^[ \t]*(?:[-*\u2022][ \t]+)?\**[ \t]*("
        + alternatives
        + r")[ \t]*\**[ \t]*(?=[.:!\-\u2013\u2014\u2192]|$)",
        re.IGNORECASE | re.MULTILINE,
    )


def _score_lines(text: str, spec: OutputSpec) -> list[_Found]:
    """Every place in ``text`` that reads as a verdict: ``Score: N``, ``N (Label) → …`` at a line's start,
    a label alone at a line's start, ``Score: Label``, or a whole answer ``N - reason``."""
    found = [
        _Found(m.start(), m.end(), float(m.group(1)), m.group(2), (m.group(3) or "").strip())
        for m in _LABELLED.finditer(text)
    ]
    found += [
        _Found(m.start(), m.end(), float(m.group(1)), m.group(2), m.group(3).strip())
        for m in _LINE_VERDICT.finditer(text)
    ]
    labels = _label_pattern(spec)
    if labels is not None:
        found += [_Found(m.start(), m.end(), label=m.group(1)) for m in labels.finditer(text)]
        for match in _LABELLED_WORD.finditer(text):
            words = match.group(1).split()
            for n in range(len(words), 0, -1):  # the longest label first: "Very Good" before "Good"
                if spec.label_value(" ".join(words[:n])) is not None:
                    found.append(_Found(match.start(), match.end(), label=" ".join(words[:n])))
                    break
    bare = _BARE_NUMBER.match(text)
    if bare:
        found.append(
            _Found(0, len(text), float(bare.group(1)), bare.group(2), reason=(bare.group(3) or "").strip())
        )
    return found


def _parse_plain(text: str, cause: JudgeOutputError, spec: OutputSpec) -> ParsedScore:
    """The last verdict line of a plain-text answer (a judge that reconsiders is read by its final word).

    A number with a label (``3 (Very Good)``) is read only when the two agree on the template's labels.
    """
    found = _score_lines(text, spec)
    if not found:
        if str(cause) == "the judge output is empty":
            raise cause
        raise JudgeOutputError("no JSON object and no 'score: N' line in the judge output")
    last = max(found, key=lambda f: (f.start, f.end))
    labelled = spec.label_value(last.label) if last.label else None
    if last.number is None:
        value = labelled
    else:
        shown = f"the score {last.number:g}" + (f"/{last.denominator}" if last.denominator else "")
        value = _fraction(last.number, last.denominator, shown, spec.scale)
        if labelled is not None and labelled != value:
            raise JudgeOutputError(
                f"the score {value:g} is labelled “{last.label}”, which is {labelled:g} on this "
                f"template's labels ({', '.join(f'{k}={v:g}' for k, v in spec.labels.items())}): number and "
                "label disagree"
            )
    rest = last.reason if last.reason is not None else (text[: last.start] + text[last.end :])
    return ParsedScore(_number(value, "the score"), rest.lstrip(" \n\t.:-*\u2192>").rstrip(" \n\t*"))


def parse_all_scores(text: str, dimensions: tuple[str, ...] | list[str]) -> dict[str, ParsedScore]:
    """Every one of ``dimensions`` from a per-dimension object (the G-Eval output format)."""
    return {d: parse_score(text, dimension=d) for d in dimensions}


def parse_verdict(text: str) -> ParsedVerdict:
    """The pairwise verdict of the G-Eval template: ``overall.winner`` and ``overall.confidence``."""
    obj = extract_json(strip_thinking(text) if text is not None and "think>" in str(text) else text)
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


@dataclass(frozen=True)
class JudgeScale:
    """A judge's declared raw scale and which end is better; maps linearly onto the rubric's scale."""

    min: float
    max: float
    higher_is_better: bool = True

    def __post_init__(self) -> None:
        if not (math.isfinite(self.min) and math.isfinite(self.max)) or self.min >= self.max:
            raise ValueError(f"scale {self.min}–{self.max}: the minimum must be below the maximum")

    @classmethod
    def parse(cls, spec: str, *, higher_is_better: bool = True) -> JudgeScale:
        """``"0-1"``, ``"1-4"``, ``"1-5"`` (any ``low-high`` pair of numbers)."""
        match = re.fullmatch(r"\s*(-?\d+(?:\.\d+)?)\s*[-–:]\s*(-?\d+(?:\.\d+)?)\s*", str(spec))
        if not match:
            raise ValueError(f"scale {spec!r} is not of the form low-high, e.g. 0-1 or 1-5")
        return cls(float(match.group(1)), float(match.group(2)), higher_is_better)

    @property
    def label(self) -> str:
        def fmt(x):
            return f"{x:g}"

        return f"{fmt(self.min)}–{fmt(self.max)}" + ("" if self.higher_is_better else ", lower is better")

    def check(self, value: float) -> None:
        if not self.min <= value <= self.max:
            raise JudgeOutputError(f"score {value:g} is outside the declared scale {self.min:g}–{self.max:g}")

    def to_rubric(self, value: float, lo: int = 1, hi: int = 5) -> float:
        """``value`` mapped linearly onto ``lo``–``hi`` with ``hi`` the best end."""
        self.check(value)
        fraction = (value - self.min) / (self.max - self.min)
        if not self.higher_is_better:
            fraction = 1.0 - fraction
        return lo + fraction * (hi - lo)
