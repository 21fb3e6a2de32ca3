"""Reading a plain-text answer: ``Score: N`` lines, ``N (Label) → …`` verdicts, labels alone, a bare
``N - reason``; a list of the scale echoed back is not a verdict, and two labelled verdicts that disagree
are ambiguous. Also ``accuracy: 4`` lines, one per dimension."""

from __future__ import annotations

import re
from dataclasses import dataclass

from hcs.judge_output.extract import ECHOED
from hcs.judge_output.values import (
    _NUMBER,
    AmbiguousOutput,
    JudgeOutputError,
    OutputSpec,
    ParsedScore,
    _fraction,
    _number,
)

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
# "Verdict: Very Good"; not "the rating is good overall", which is prose.
_LABELLED_WORD = re.compile(
    r"\b(?:score|rating|verdict)\b[ \t]*[:=][ \t]*\**[ \t]*([A-Za-z][^\n*.,;]*)", re.IGNORECASE
)
_BARE_NUMBER = re.compile(r"^\s*" + _NUMBER + r"[ \t]*(?:(?:[-–—:]|\n)\s*(.*))?$", re.DOTALL)


def _names_none(dimensions, shown: str) -> str:
    return (
        f"the judge output names none of the {len(dimensions)} dimensions it was asked to score, so none is "
        f"scored: one number is not a score for each (asked for {', '.join(dimensions)}; {shown})"
    )


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
