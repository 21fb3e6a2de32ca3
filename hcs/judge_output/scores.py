"""Reading the score a judge gave: from a JSON object (a score key, a custom verdict key, one nested
object per dimension, a lone number beside text fields), else from plain text."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hcs.judge_output.extract import _without_examples, answer_text, extract_json
from hcs.judge_output.plain import _named_lines, _names_none, _parse_plain
from hcs.judge_output.values import (
    LABEL_KEY,
    REASON_KEYS,
    SCORE_KEYS,
    JudgeOutputError,
    OutputSpec,
    ParsedScore,
    _number,
    normalize_key,
)


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


def parse_all_scores(text: str, dimensions: tuple[str, ...] | list[str]) -> dict[str, ParsedScore]:
    """Every one of ``dimensions`` from a per-dimension object (the G-Eval output format); raises
    JudgeOutputError naming the first dimension that has no score."""
    scores, problems = parse_named_scores(text, dimensions)
    if problems:
        raise JudgeOutputError(f"[{problems[0][0]}] {problems[0][1]}")
    return scores
