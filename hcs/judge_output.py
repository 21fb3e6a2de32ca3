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
LABEL_KEY = (
    "label"  # the verdict label beside the score in a structured answer (``{"score": 3, "label": ...}``)
)
AMBIGUOUS_MARK = "ambiguous: "  # every AmbiguousOutput message starts so: a stored reason says which it was
WINNERS = ("baseline", "enhanced", "tie")

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)
_NUMBER = r"(-?\d+(?:\.\d+)?)(?:\s*/\s*(\d+(?:\.\d+)?))?"
_LABEL_NOTE = r"[ \t]*\**[ \t]*(?:\(([^()\n]*)\))?"
# "Score: 4", "Rating is 3/5", "My verdict: **2 (Good)**" (the words before the keyword are the verdict's).
_LABELLED = re.compile(
    r"(?:\b(?:my|the|final|overall)[ \t]+)*\b(?:score|rating|verdict)\b\s*(?:is|[:=])?\s*\**\s*"
    + _NUMBER
    + _LABEL_NOTE,
    re.IGNORECASE,
)
# "**3 (Very Good)** → ..." or "3 (Very Good) - ..." at a line's start: the seed's rubric prints verdicts so.
_LINE_VERDICT = re.compile(
    r"^[ \t]*(?:[-*\u2022][ \t]+)?\**[ \t]*" + _NUMBER + r"[ \t]*\(([^()\n]*)\)[ \t]*\**[ \t]*"
    r"(?=(?:\u2192|->|[-\u2013\u2014:.])(?:[ \t]|$)|$)",
    re.MULTILINE,
)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
# "Verdict: Very Good"; not "the rating is good overall", which is prose.
_LABELLED_WORD = re.compile(
    r"\b(?:score|rating|verdict)\b[ \t]*[:=][ \t]*\**[ \t]*([A-Za-z][^\n*.,;]*)", re.IGNORECASE
)
_BARE_NUMBER = re.compile(r"^\s*" + _NUMBER + r"[ \t]*(?:(?:[-–—:]|\n)\s*(.*))?$", re.DOTALL)
_TEXT_NUMBER = re.compile(r"^\s*\**\s*" + _NUMBER + r"\s*\**\s*(?:\(([^()]*)\))?\s*$")


class JudgeOutputError(ValueError):
    """The judge's text holds no score that can be read; the message says what was missing."""


class AmbiguousOutput(JudgeOutputError):
    """The judge's text holds two different verdicts and nothing says which is its answer: none is stored."""

    def __init__(self, message: str):
        super().__init__(AMBIGUOUS_MARK + message)


def is_ambiguous(error: str) -> bool:
    """Whether a stored problem message is an ``AmbiguousOutput``'s."""
    return str(error).startswith(AMBIGUOUS_MARK)


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
    examples: frozenset[str] = frozenset()  # the JSON objects the prompt shows (``example_objects``)

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


def _canonical(value: Any) -> str | None:
    """One spelling of a JSON value, whatever its whitespace and key order (None when it cannot be)."""
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return None


def _prose_objects(text: str) -> list[tuple[int, int, dict]]:
    """(start, end, object) of every top-level JSON object in ``text``, in order."""
    decoder = json.JSONDecoder()
    found, end = [], 0
    for match in re.finditer(r"\{", text):
        if match.start() < end:
            continue
        try:
            value, stop = decoder.raw_decode(text, match.start())
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            found.append((match.start(), stop, value))
            end = stop
    return found


def example_objects(*texts: str) -> frozenset[str]:
    """The JSON objects written in a template's own text (its few-shot examples), for ``OutputSpec.examples``:
    a reply that echoes one of them has not given it as its answer."""
    return frozenset(
        c for text in texts for _, _, obj in _prose_objects(str(text or "")) if (c := _canonical(obj))
    )


ECHOED = "the judge output only repeats an example shown in the prompt and gives no answer of its own"


def extract_json(text: str, examples: frozenset[str] = frozenset()) -> Any:
    """The JSON value in ``text``: the whole text, else the last fenced block that parses, else the last
    top-level object in prose (a judge that echoes the prompt's example before its answer is read by
    its answer). A value equal to one of ``examples`` (the prompt's own, see ``example_objects``) is never
    the answer, wherever it stands. Raises JudgeOutputError when there is none.
    """
    if text is None or not str(text).strip():
        raise JudgeOutputError("the judge output is empty")
    text = str(text)

    def own(values: list[Any]) -> list[Any]:
        return [v for v in values if not examples or _canonical(v) not in examples]

    # ValueError covers JSONDecodeError and integers past Python's digit limit; RecursionError
    # arrays nested deeper than the parser's recursion limit.
    try:
        whole = [json.loads(text)]
    except (ValueError, RecursionError):
        whole = []
    if whole:
        if own(whole):
            return whole[0]
        raise JudgeOutputError(ECHOED)
    fenced: list[Any] = []
    for block in _FENCE.findall(text):
        try:
            fenced.append(json.loads(block))
        except (ValueError, RecursionError):
            continue
    if own(fenced):
        return own(fenced)[-1]
    prose = [obj for _, _, obj in _prose_objects(text)]
    if own(prose):
        return own(prose)[-1]
    if fenced or prose:
        raise JudgeOutputError(ECHOED)
    raise JudgeOutputError("no JSON object found in the judge output")


def _without_examples(text: str, examples: frozenset[str]) -> str:
    """``text`` with the prompt's example objects blanked out, so plain-text reading does not see them."""
    for start, stop, obj in reversed(_prose_objects(text)):
        if _canonical(obj) in examples:
            text = text[:start] + " " * (stop - start) + text[stop:]
    return text


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


def _reason(obj: Mapping[str, Any], extra_keys: tuple[str, ...] = (), used: tuple[str, ...] = ()) -> str:
    """The reason beside a score: a reason key's text, else the text fields the judge wrote instead (one
    alone as it is, several as ``key: text``), so a reason under a key of the judge's own is not lost.
    ``used``: the keys that held the score."""
    keys = {normalize_key(k): k for k in obj}
    for key in (*extra_keys, *REASON_KEYS):
        original = keys.get(normalize_key(key))
        if original is not None and isinstance(obj[original], str):
            return obj[original]
    skip = {normalize_key(k) for k in (*used, *SCORE_KEYS, LABEL_KEY)}
    texts = [
        (k, v) for k, v in obj.items() if isinstance(v, str) and v.strip() and normalize_key(k) not in skip
    ]
    if len(texts) == 1:
        return texts[0][1]
    return "; ".join(f"{k}: {v}" for k, v in texts)


def _check_label(obj: Mapping[str, Any], number: float, where: str, spec: OutputSpec | None) -> None:
    """A structured answer's ``label`` must name the same verdict as its score (rule 8: 3 is Very Good)."""
    if not (spec and spec.labels):
        return
    original = {normalize_key(k): k for k in obj}.get(LABEL_KEY)
    label = obj[original] if original is not None else None
    value = spec.label_value(label) if isinstance(label, str) else None
    if value is not None and value != number:
        raise JudgeOutputError(
            f"{where}{number:g} is labelled \u201c{label}\u201d, which is {value:g} on this template's "
            "labels: number and label disagree"
        )


def _from_object(obj: Mapping[str, Any], where: str, score_keys, reason_keys, spec) -> ParsedScore | None:
    keys = {normalize_key(k): k for k in obj}
    for key in score_keys:
        original = keys.get(normalize_key(key))
        if original is not None and not isinstance(obj[original], (dict, list)):
            number = _number(obj[original], f"{where}{original!r}", spec)
            _check_label(obj, number, f"{where}{original!r} ", spec)
            return ParsedScore(number, _reason(obj, reason_keys, (original,)))
    return None


def _flat_named(obj: Mapping[str, Any], reason_keys, spec) -> ParsedScore | None:
    """``{"hub_answer_correctness": 0.8, "reason": "..."}``: the one number beside text fields."""
    reasons = {normalize_key(k) for k in (*reason_keys, *REASON_KEYS)}
    others = [k for k in obj if normalize_key(k) not in reasons]
    numbers = [k for k in others if isinstance(obj[k], (int, float)) and not isinstance(obj[k], bool)]
    if len(numbers) == 1 and all(isinstance(obj[k], str) for k in others if k != numbers[0]):
        return ParsedScore(
            _number(obj[numbers[0]], f"{numbers[0]!r}", spec), _reason(obj, reason_keys, (numbers[0],))
        )
    return None


def answer_text(text: str) -> str:
    """The judge's text without its reasoning blocks; raises when nothing but reasoning is left."""
    if text is not None and "think>" in str(text):
        text = strip_thinking(text)
        if not text.strip():
            raise JudgeOutputError(
                "the judge output holds only its reasoning (<think>…</think>) and no answer"
            )
    return text


def _keys(spec: OutputSpec) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the keys a score may stand under, the keys a reason may), the template's own first."""
    return tuple(k for k in (spec.verdict_key, *SCORE_KEYS) if k), (
        (spec.reason_key,) if spec.reason_key else ()
    )


def _dimension_score(obj: Mapping[str, Any], original: str, spec: OutputSpec) -> ParsedScore:
    """The score under the dimension's own key: an object with a score key, or a number."""
    score_keys, reason_keys = _keys(spec)
    inner = obj[original]
    if isinstance(inner, dict):
        found = _from_object(inner, f"{original!r} → ", score_keys, reason_keys, spec)
        if found is None:
            raise JudgeOutputError(
                f"the object for {original!r} has no score (keys: {', '.join(map(str, inner)) or 'none'})"
            )
        return found
    return ParsedScore(_number(inner, f"{original!r}", spec), _reason(obj, reason_keys, (original,)))


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

    This reads the one verdict of a one-dimension judge: an answer without ``dimension``'s key gives its
    single score. A template that scores several dimensions in one call is read by ``parse_named_scores``.
    """
    spec = spec or OutputSpec(verdict_key=verdict_key, reason_key=reason_key)
    text = answer_text(text)
    score_keys, reason_keys = _keys(spec)
    try:
        obj = extract_json(text, spec.examples)
    except JudgeOutputError as exc:
        return _parse_plain(_without_examples(str(text or ""), spec.examples), exc, spec)
    if isinstance(obj, (int, float)) and not isinstance(obj, bool):
        return ParsedScore(_number(obj, "the output", spec))
    if not isinstance(obj, dict):
        raise JudgeOutputError(f"the judge output is a JSON {type(obj).__name__}, not an object with a score")
    keys = {normalize_key(k): k for k in obj}
    if dimension is not None and normalize_key(dimension) in keys:
        return _dimension_score(obj, keys[normalize_key(dimension)], spec)
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


def _names_none(dimensions, shown: str) -> str:
    return (
        f"the judge output names none of the {len(dimensions)} dimensions it was asked to score, so none is "
        f"scored: one number is not a score for each (asked for {', '.join(dimensions)}; {shown})"
    )


def parse_named_scores(
    text: str, dimensions: tuple[str, ...] | list[str], *, spec: OutputSpec | None = None
) -> tuple[dict[str, ParsedScore], list[tuple[str, str]]]:
    """(the score of each of ``dimensions`` the reply names, [(dimension, why it has none)]) for a template
    scoring several dimensions in one call: a JSON object with one key per dimension (``{"accuracy":
    {"score": 4, ...}}`` or ``{"accuracy": 4}``), or plain lines ``accuracy: 4``.

    A dimension the reply does not name gets no score: a lone ``{"score": 4}`` is not five judgements.
    Raises JudgeOutputError when the reply names none of them (or has nothing to read at all).
    """
    spec = spec or OutputSpec()
    text = answer_text(text)
    try:
        obj = extract_json(text, spec.examples)
    except JudgeOutputError as exc:
        return _named_lines(_without_examples(str(text or ""), spec.examples), dimensions, spec, exc)
    if not isinstance(obj, dict):
        raise JudgeOutputError(_names_none(dimensions, f"a JSON {type(obj).__name__}, not an object"))
    keys = {normalize_key(k): k for k in obj}
    if not any(normalize_key(d) in keys for d in dimensions):
        raise JudgeOutputError(_names_none(dimensions, f"its keys: {', '.join(map(str, obj)) or 'none'}"))
    scores, problems = {}, []
    for dimension in dimensions:
        original = keys.get(normalize_key(dimension))
        if original is None:
            problems.append((dimension, f"the judge output gives no score for {dimension!r}"))
            continue
        try:
            scores[dimension] = _dimension_score(obj, original, spec)
        except JudgeOutputError as exc:
            problems.append((dimension, str(exc)))
    return scores, problems


def _named_lines(text: str, dimensions, spec: OutputSpec, cause: JudgeOutputError):
    """``parse_named_scores`` of a plain-text answer: a line ``accuracy: 4`` (``- **Accuracy**: 4/5 - why``)
    per dimension; a dimension given two different numbers is ambiguous."""
    if str(cause) in ("the judge output is empty", ECHOED):
        raise cause
    scores, problems, named = {}, [], False
    for dimension in dimensions:
        name = r"[ \t_-]+".join(map(re.escape, re.split(r"[\s_-]+", dimension.strip())))
        pattern = re.compile(
            r"^[ \t]*(?:[-*\u2022][ \t]+)?\**[ \t]*"
            + name
            + r"[ \t]*\**[ \t]*[:=\-\u2013\u2014][ \t]*\**[ \t]*"
            + _NUMBER
            + r"[ \t]*\**[ \t]*(?:[-\u2013\u2014:.\u2192][ \t]*)?([^\n]*)$",
            re.IGNORECASE | re.MULTILINE,
        )
        lines = list(pattern.finditer(text))
        named = named or bool(lines)
        if not lines:
            problems.append((dimension, f"the judge output gives no score for {dimension!r}"))
            continue
        try:
            values = {
                _fraction(
                    float(m.group(1)), m.group(2), f"the score of {dimension!r} {m.group(1)}", spec.scale
                )
                for m in lines
            }
            if len(values) > 1:
                raise AmbiguousOutput(
                    f"{dimension!r} is given {len(values)} different scores "
                    f"({', '.join(f'{v:g}' for v in sorted(values))}); none is taken"
                )
            scores[dimension] = ParsedScore(_number(values.pop(), "the score"), lines[-1].group(3).strip())
        except JudgeOutputError as exc:
            problems.append((dimension, str(exc)))
    if not named:
        raise JudgeOutputError(
            _names_none(dimensions, f"plain text, with no line such as `{next(iter(dimensions), 'name')}: 4`")
        )
    return scores, problems


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
    opens_line: bool = (
        False  # "**3 (Very Good)** → …" or "Very Good. …" at a line's start: a scale list's shape
    )


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
        _Found(m.start(), m.end(), float(m.group(1)), m.group(2), m.group(3).strip(), opens_line=True)
        for m in _LINE_VERDICT.finditer(text)
    ]
    labels = _label_pattern(spec)
    if labels is not None:
        found += [
            _Found(m.start(), m.end(), label=m.group(1), opens_line=True) for m in labels.finditer(text)
        ]
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


def _line_end(text: str, pos: int) -> int:
    """The end of the line holding ``pos`` and of the indented lines continuing it."""
    end = text.find("\n", pos)
    while end >= 0:
        following = text.find("\n", end + 1)
        line = text[end + 1 : following if following >= 0 else len(text)]
        if not (line[:1] in (" ", "\t") and line.strip()):
            return end
        end = following
    return len(text)


def _next_in_list(text: str, before: _Found, after: _Found) -> bool:
    """Whether ``after`` opens the line after ``before``'s (indented continuation lines between them)."""
    between = text[before.end : after.start].split("\n")
    return (
        len(between) >= 2
        and not between[-1].strip()
        and all(line[:1] in (" ", "\t") and line.strip() for line in between[1:-1])
    )


def _scale_lists(text: str, found: list[_Found], spec: OutputSpec) -> list[tuple[int, int]]:
    """The spans of ``text`` that list the scale: two or more verdict-shaped lines in a row (``- **4
    (Excellent)** → …``, ``- **3 (Very Good)** → …``) naming different scale points, as a judge that echoes
    the rubric writes them. A line repeating a point already listed starts a new run: it is a verdict."""
    runs: list[list[tuple[_Found, float | None]]] = []
    for f in sorted((f for f in found if f.opens_line), key=lambda f: f.start):
        point = f.number if f.number is not None else spec.label_value(f.label)
        run = runs[-1] if runs else None
        if run and _next_in_list(text, run[-1][0], f) and point not in {p for _, p in run}:
            run.append((f, point))
        else:
            runs.append([(f, point)])
    return [(run[0][0].start, _line_end(text, run[-1][0].end)) for run in runs if len(run) >= 2]


def _found_value(f: _Found, spec: OutputSpec) -> float:
    """The score one verdict gives; a number and a label that disagree on the template's labels are
    refused."""
    labelled = spec.label_value(f.label) if f.label else None
    if f.number is None:
        return _number(labelled, "the score")
    shown = f"the score {f.number:g}" + (f"/{f.denominator}" if f.denominator else "")
    value = _fraction(f.number, f.denominator, shown, spec.scale)
    if labelled is not None and labelled != value:
        raise JudgeOutputError(
            f"the score {value:g} is labelled “{f.label}”, which is {labelled:g} on this "
            f"template's labels ({', '.join(f'{k}={v:g}' for k, v in spec.labels.items())}): number and "
            "label disagree"
        )
    return value


def _shown(f: _Found) -> str:
    number = "" if f.number is None else f"{f.number:g}" + (f"/{f.denominator}" if f.denominator else "")
    return " ".join(filter(None, (number, f"({f.label})" if number and f.label else f.label)))


def _parse_plain(text: str, cause: JudgeOutputError, spec: OutputSpec) -> ParsedScore:
    """The verdict of a plain-text answer.

    A list of the scale (the rubric echoed back) is not a verdict. Of the verdicts outside such lists, the
    last is read (a judge that reconsiders is read by its final word), unless a labelled one (``3 (Very
    Good)``, ``Verdict: Good``) disagrees with another: then the answer is ambiguous and none is read.
    A number with a label is read only when the two agree on the template's labels.
    """
    found = _score_lines(text, spec)
    if not found:
        if str(cause) in ("the judge output is empty", ECHOED):
            raise cause
        raise JudgeOutputError("no JSON object and no 'score: N' line in the judge output")
    lists = _scale_lists(text, found, spec)
    own = [f for f in found if not any(start <= f.start < end for start, end in lists)]
    if not own:
        raise JudgeOutputError(
            "the judge output lists the scale (one line per score, as the rubric does) but gives no verdict "
            "of its own outside that list"
        )
    own.sort(key=lambda f: (f.start, f.end))
    if any(f.label for f in own):
        given: dict[float, _Found] = {}
        for f in own:
            given.setdefault(_found_value(f, spec), f)
        if len(given) > 1:
            raise AmbiguousOutput(
                f"the judge output gives {len(given)} different verdicts outside a list of the scale ("
                + ", ".join(f"\u201c{_shown(f)}\u201d" for f in given.values())
                + "); none is taken"
            )
    last = own[-1]
    value = _found_value(last, spec)
    if last.reason is not None:
        rest = last.reason
    else:
        verdict = (last.start, last.end)
        kept, at, after_verdict = [], 0, False
        for start, end in sorted([*lists, verdict]):
            kept.append(_between(text[at:start], after_verdict, list_follows=(start, end) != verdict))
            at, after_verdict = max(at, end), (start, end) == verdict
        rest = "".join(kept) + _between(text[at:], after_verdict, list_follows=False)
        rest = re.sub(r"\n[ \t]*(?:\n[ \t]*)+", "\n\n", rest)
    return ParsedScore(_number(value, "the score"), rest.lstrip(" \n\t.:-*\u2192>").rstrip(" \n\t*"))


_HEADING = re.compile(r"(?m)^[^\n]*:[ \t]*\n?\Z")  # a last line like "Rubric recap:"


def _between(piece: str, after_verdict: bool, *, list_follows: bool) -> str:
    """Text of a plain answer kept for its reason: after the verdict, without the verdict's own closing
    ``**`` and arrow; before an echoed scale, without the line that introduces it."""
    if after_verdict:
        piece = piece.lstrip(" \t*\u2192>:-")
    if list_follows:
        piece = _HEADING.sub("", piece)
    return piece


def parse_all_scores(text: str, dimensions: tuple[str, ...] | list[str]) -> dict[str, ParsedScore]:
    """Every one of ``dimensions`` from a per-dimension object (the G-Eval output format); raises
    JudgeOutputError naming the first dimension that has no score."""
    scores, problems = parse_named_scores(text, dimensions)
    if problems:
        raise JudgeOutputError(f"[{problems[0][0]}] {problems[0][1]}")
    return scores


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
