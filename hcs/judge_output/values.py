"""What a judge's score is: the keys it stands under, the errors a reply that holds none raises, the
parsed score, how a template asks to be read (``OutputSpec``), one score cell read as a number, and the
judge's scale mapped onto the rubric's."""

from __future__ import annotations

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

_NUMBER = r"(-?\d+(?:\.\d+)?)(?:\s*/\s*(\d+(?:\.\d+)?))?"
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
