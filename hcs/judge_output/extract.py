"""Finding the answer in a judge's text: without its reasoning blocks, and the JSON value it gives (not an
example the prompt showed)."""

from __future__ import annotations

import json
import re
from typing import Any

from hcs.judge_output.values import JudgeOutputError

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)


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


def answer_text(text: str) -> str:
    """The judge's text without its reasoning blocks; raises when nothing but reasoning is left."""
    if text is not None and "think>" in str(text):
        text = strip_thinking(text)
        if not text.strip():
            raise JudgeOutputError(
                "the judge output holds only its reasoning (<think>…</think>) and no answer"
            )
    return text


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
