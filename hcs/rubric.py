"""A rubric as data: dimensions, weights, flags and the score rules (caps) they trigger.

The HCS rubric lives in ``hcs/rubrics/hcs.json`` (installed with the package); a study with other dimensions
brings another JSON file of the same schema and needs no code.

>>> rubric = Rubric.default()
>>> rubric.overall({"coherence": 5, "relevance": 5, "instruction_following": 5,
...                 "safety_compliance": 5, "fluency": 5})
5.0
>>> rubric.allowed_range("instruction_following", {"ignores_hard_constraint"})
(1, 2)
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_RUBRIC_PATH = Path(__file__).resolve().parent / "rubrics" / "hcs.json"


KEY_MAX_LENGTH = 64  # dimension and flag keys are stored in columns of this width


class RubricError(ValueError):
    """The rubric file itself is malformed."""


@dataclass(frozen=True)
class Dimension:
    key: str
    label: str
    weight: float
    description: str
    levels: tuple[str, ...]  # levels[i] describes score scale_min + i
    abbreviation: str = ""


@dataclass(frozen=True)
class Flag:
    key: str
    label: str
    description: str


@dataclass(frozen=True)
class Rule:
    """When ``flag`` is set, ``dimension`` must lie within ``[min, max]``."""

    flag: str
    dimension: str
    min: int
    max: int
    explanation: str


@dataclass(frozen=True)
class Rubric:
    name: str
    version: str
    title: str
    scale_min: int
    scale_max: int
    dimensions: tuple[Dimension, ...]
    flags: tuple[Flag, ...]
    rules: tuple[Rule, ...]
    exclusive_flags: tuple[tuple[str, ...], ...] = ()
    purpose: str = ""
    guidance: tuple[str, ...] = ()
    examples: tuple[Mapping[str, Any], ...] = ()

    # ------------------------------------------------------------------ loading
    @classmethod
    def load(cls, path: str | Path) -> Rubric:
        path = Path(path)
        try:
            data = parse_json(path.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise RubricError(f"rubric file {path} does not exist") from exc
        except json.JSONDecodeError as exc:
            raise RubricError(f"rubric file {path} is not valid JSON: {exc}") from exc
        return cls.from_dict(data)

    @classmethod
    def default(cls) -> Rubric:
        return _default()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Rubric:
        try:
            scale = data["scale"]
            scale_min, scale_max = int(scale["min"]), int(scale["max"])
            dimensions = tuple(
                Dimension(
                    key=d["key"],
                    label=d["label"],
                    weight=float(d["weight"]),
                    description=d.get("description", ""),
                    levels=tuple(d["levels"][str(v)] for v in range(scale_min, scale_max + 1)),
                    abbreviation=d.get("abbreviation", ""),
                )
                for d in data["dimensions"]
            )
            flags = tuple(
                Flag(key=f["key"], label=f["label"], description=f.get("description", ""))
                for f in data.get("flags", [])
            )
            rules = tuple(
                Rule(
                    flag=r["flag"],
                    dimension=r["dimension"],
                    min=int(r.get("min", scale_min)),
                    max=int(r.get("max", scale_max)),
                    explanation=r.get("explanation", ""),
                )
                for r in data.get("rules", [])
            )
            rubric = cls(
                name=data["name"],
                version=str(data.get("version", "1")),
                title=data.get("title", data["name"]),
                scale_min=scale_min,
                scale_max=scale_max,
                dimensions=dimensions,
                flags=flags,
                rules=rules,
                exclusive_flags=tuple(tuple(group) for group in data.get("exclusive_flags", [])),
                purpose=data.get("purpose", ""),
                guidance=tuple(data.get("guidance", [])),
                examples=tuple(data.get("examples", [])),
            )
        except KeyError as exc:
            raise RubricError(f"rubric is missing the key {exc.args[0]!r}") from exc
        except (TypeError, ValueError) as exc:
            raise RubricError(f"rubric has a malformed value: {exc}") from exc
        rubric._check()
        return rubric

    def _check(self) -> None:
        self._check_shapes()
        if self.scale_min >= self.scale_max:
            raise RubricError("rubric scale min must be below max")
        if not self.dimensions:
            raise RubricError("rubric has no dimensions")
        keys = [d.key for d in self.dimensions]
        if len(set(keys)) != len(keys):
            raise RubricError("rubric dimension keys must be unique")
        total = sum(d.weight for d in self.dimensions)
        if not math.isclose(total, 1.0, abs_tol=1e-9):
            raise RubricError(f"rubric weights must sum to 1, they sum to {total:g}")
        flag_keys = {f.key for f in self.flags}
        for rule in self.rules:
            if rule.flag not in flag_keys:
                raise RubricError(f"rule names unknown flag {rule.flag!r}")
            if rule.dimension not in keys:
                raise RubricError(f"rule names unknown dimension {rule.dimension!r}")
            if not self.scale_min <= rule.min <= rule.max <= self.scale_max:
                raise RubricError(f"rule for {rule.flag!r} has a range outside the scale")
        for group in self.exclusive_flags:
            for key in group:
                if key not in flag_keys:
                    raise RubricError(f"exclusive_flags names unknown flag {key!r}")

    def _check_shapes(self) -> None:
        """Every text is a string and every key a short non-empty one: a rubric file can come from
        an upload, and the pages, plots and database columns (64 characters) rely on these types."""
        texts = [("name", self.name), ("title", self.title), ("purpose", self.purpose)]
        texts += [(f"guidance {i + 1}", g) for i, g in enumerate(self.guidance)]
        for d in self.dimensions:
            texts += [
                (f"dimension {d.key!r} {field}", getattr(d, field))
                for field in ("label", "description", "abbreviation")
            ]
            texts += [(f"dimension {d.key!r} level {i + self.scale_min}", t) for i, t in enumerate(d.levels)]
        for f in self.flags:
            texts += [(f"flag {f.key!r} label", f.label), (f"flag {f.key!r} description", f.description)]
        texts += [(f"rule for {r.flag!r} explanation", r.explanation) for r in self.rules]
        for where, value in texts:
            if not isinstance(value, str):
                raise RubricError(f"rubric {where} must be text, not {type(value).__name__}")
        for kind, keys in (("dimension", self.dimension_keys), ("flag", self.flag_keys)):
            for key in keys:
                if not isinstance(key, str) or not key.strip() or len(key) > KEY_MAX_LENGTH:
                    raise RubricError(
                        f"rubric {kind} keys must be text of 1 to {KEY_MAX_LENGTH} characters: {key!r}"
                    )
        if not all(isinstance(e, Mapping) for e in self.examples):
            raise RubricError("rubric examples must be JSON objects")
        if not all(isinstance(k, str) for group in self.exclusive_flags for k in group):
            raise RubricError("rubric exclusive_flags must be lists of flag keys")

    # ------------------------------------------------------------------ lookups
    @property
    def dimension_keys(self) -> tuple[str, ...]:
        return tuple(d.key for d in self.dimensions)

    @property
    def flag_keys(self) -> tuple[str, ...]:
        return tuple(f.key for f in self.flags)

    @property
    def weights(self) -> dict[str, float]:
        return {d.key: d.weight for d in self.dimensions}

    @property
    def levels(self) -> tuple[int, ...]:
        return tuple(range(self.scale_min, self.scale_max + 1))

    def dimension(self, key: str) -> Dimension:
        for d in self.dimensions:
            if d.key == key:
                return d
        raise KeyError(key)

    def flag(self, key: str) -> Flag:
        for f in self.flags:
            if f.key == key:
                return f
        raise KeyError(key)

    # ------------------------------------------------------------------ rules
    def allowed_range(self, dimension: str, flags: Iterable[str]) -> tuple[int, int]:
        """The scores ``dimension`` may take when ``flags`` are set (the caps intersected).

        The range is empty (min > max) when two rules contradict each other.
        """
        lo, hi = self.scale_min, self.scale_max
        active = set(flags)
        for rule in self.rules:
            if rule.dimension == dimension and rule.flag in active:
                lo, hi = max(lo, rule.min), min(hi, rule.max)
        return lo, hi

    def validate(
        self,
        scores: Mapping[str, Any],
        flags: Iterable[str] = (),
        *,
        require_all: bool = True,
    ) -> list[str]:
        """Every reason the scores and flags break the rubric, as sentences; empty if valid.

        ``scores`` maps dimension keys to whole numbers; ``None`` means "not rated",
        allowed only when ``require_all`` is false.
        """
        errors: list[str] = []
        flags = list(flags)
        known_flags = set(self.flag_keys)
        for key in flags:
            if key not in known_flags:
                errors.append(f"{key!r} is not a flag of the {self.title} rubric.")
        active = set(flags) & known_flags
        for group in self.exclusive_flags:
            both = [k for k in group if k in active]
            if len(both) > 1:
                labels = " and ".join(self.flag(k).label for k in both)
                errors.append(f"{labels} cannot both be set.")
        for key in scores:
            if key not in self.dimension_keys:
                errors.append(f"{key!r} is not a dimension of the {self.title} rubric.")
        for dim in self.dimensions:
            value = scores.get(dim.key)
            if value is None or value == "":
                if require_all:
                    errors.append(f"{dim.label} needs a score.")
                continue
            number = _as_whole_number(value)
            if number is None:
                errors.append(f"{dim.label}: {value!r} is not a whole number.")
                continue
            if not self.scale_min <= number <= self.scale_max:
                errors.append(f"{dim.label}: {number} is outside {self.scale_min}\u2013{self.scale_max}.")
                continue
            for rule in self.rules:
                if rule.dimension == dim.key and rule.flag in active and not rule.min <= number <= rule.max:
                    flag = self.flag(rule.flag)
                    allowed = str(rule.max) if rule.min == self.scale_min else f"{rule.min}\u2013{rule.max}"
                    bound = "at most" if rule.min == self.scale_min else "within"
                    errors.append(
                        f"{dim.label} is {number}, but with \u201c{flag.label}\u201d it must be "
                        f"{bound} {allowed}."
                    )
        return errors

    def overall(self, scores: Mapping[str, Any]) -> float | None:
        """The weighted overall score, or ``None`` when any dimension is unrated.

        For HCS: 0.40·C + 0.20·R + 0.20·I + 0.10·S + 0.10·F.
        """
        total = 0.0
        for dim in self.dimensions:
            value = scores.get(dim.key)
            if value is None:
                return None
            total += dim.weight * float(value)
        return round(total, 10)

    # ------------------------------------------------------------------ export
    def rules_data(self) -> list[dict[str, Any]]:
        """The rules as data: the rubric file's ``rules`` and what the rating page's script applies as
        the annotator ticks flags, so the page and ``validate`` read the same caps."""
        return [
            {
                "flag": r.flag,
                "dimension": r.dimension,
                "min": r.min,
                "max": r.max,
                "explanation": r.explanation,
            }
            for r in self.rules
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "title": self.title,
            "purpose": self.purpose,
            "scale": {"min": self.scale_min, "max": self.scale_max, "higher_is_better": True},
            "dimensions": [
                {
                    "key": d.key,
                    "label": d.label,
                    "abbreviation": d.abbreviation,
                    "weight": d.weight,
                    "description": d.description,
                    "levels": {str(self.scale_min + i): text for i, text in enumerate(d.levels)},
                }
                for d in self.dimensions
            ],
            "flags": [{"key": f.key, "label": f.label, "description": f.description} for f in self.flags],
            "rules": self.rules_data(),
            "exclusive_flags": [list(group) for group in self.exclusive_flags],
            "guidance": list(self.guidance),
            "examples": [dict(example) for example in self.examples],
        }


def _refuse_constant(name: str) -> Any:
    raise json.JSONDecodeError(f"{name} is not a JSON number", name, 0)


def parse_json(text: str) -> Any:
    """Strict JSON: ``NaN`` and ``Infinity``, which Python accepts but JSON and databases do not, are errors."""
    return json.loads(text, parse_constant=_refuse_constant)


def _as_whole_number(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            try:
                number = float(text)
            except ValueError:
                return None
            return int(number) if number.is_integer() else None
    return None


def parse_score(value: Any) -> int | None:
    """A score cell as a whole number, or ``None`` when it is not one."""
    return _as_whole_number(value)


_DEFAULT: Rubric | None = None


def _default() -> Rubric:
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Rubric.load(DEFAULT_RUBRIC_PATH)
    return _DEFAULT
