"""Judge prompt templates: JSON files under ``fixtures/judge_templates/`` (or any path), run as written.

A template holds the prompt text verbatim and declares how to read it:

- ``syntax``: ``"double"`` (``{{name}}``, the default) or ``"single"`` (``{name}``, the reference-answer
  template's style). Names may hold hyphens (``{{more-context}}``).
- ``variables``: template variable → item field, when the template's name differs from the field
  (``{"context": "conversation"}`` for the thread rules). Unmapped names are item fields themselves.
- ``constants``: values fixed by the template (``{"VERDICT_KEY": "answer_match"}``).
- ``optional``: variables that may be empty (the hub rules' ``more-context``); any other variable that
  is missing or empty on an item stops the run before its first call, naming the variable and the item.
- ``scale``, ``higher_is_better``, ``dimensions``, ``verdict_key``, ``reason_key``, ``labels`` (verdict
  label → number), ``trace_mapping`` (variable → trace path, the rules' own mappings), ``pairwise``
  (one call per baseline/enhanced pair: ``baseline_response`` and ``enhanced_response`` are filled) and
  ``criteria_map`` (the judge's own criteria → rubric dimensions, for calibration).

Item fields: ``input``/``prompt``, ``output``/``response``, ``context``, ``expected_output``,
``constraints``, ``conversation`` (every turn, the final assistant reply included), ``thread`` (the turns
up to the last user message), ``rubric``, ``item_id``, ``prompt_id``, ``system_id``, and every named
field kept in the item's metadata (trace import ``--map 'more-context = output.messages[-3].content'``).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from annotator.turns import is_user, normalise_turns
from hcs.judge_output import JudgeScale, OutputSpec, example_objects
from hcs.rubric import Rubric
from hcs.scale_check import scale_conflicts

TEMPLATE_DIR = Path(__file__).resolve().parents[3] / "fixtures" / "judge_templates"
NAME = r"[A-Za-z_][A-Za-z0-9_\-]*"
SYNTAXES = {
    "double": re.compile(r"\{\{\s*(" + NAME + r")\s*\}\}"),
    "single": re.compile(r"(?<!\{)\{(" + NAME + r")\}(?!\})"),
}
# What decides the prompt sent and how its answer is read; a change to any of these is a new judge version.
HASHED = (
    "prompt",
    "system",
    "syntax",
    "variables",
    "constants",
    "optional",
    "scale",
    "higher_is_better",
    "dimensions",
    "verdict_key",
    "reason_key",
    "labels",
    "pairwise",
)


class TemplateError(ValueError):
    pass


@dataclass(frozen=True)
class JudgeTemplate:
    name: str
    version: str
    description: str
    scale: JudgeScale
    dimensions: tuple[str, ...] | str
    prompt: str
    system: str = ""
    syntax: str = "double"
    variables: dict[str, str] = field(default_factory=dict)
    constants: dict[str, str] = field(default_factory=dict)
    optional: frozenset[str] = frozenset()
    verdict_key: str | None = None
    reason_key: str | None = None
    labels: dict[str, float] = field(default_factory=dict)
    trace_mapping: dict[str, str] = field(default_factory=dict)
    pairwise: bool = False
    criteria_map: dict[str, str] = field(default_factory=dict)  # the judge's criterion → rubric dimension
    source: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JudgeTemplate:
        try:
            dims = data.get("dimensions", ["overall"])
            syntax = str(data.get("syntax", "double"))
            if syntax not in SYNTAXES:
                raise ValueError(f"syntax {syntax!r} is not one of {', '.join(SYNTAXES)}")
            template = cls(
                name=str(data["name"]),
                version=str(data.get("version", "")),
                description=str(data.get("description", "")),
                scale=JudgeScale.parse(
                    str(data["scale"]), higher_is_better=bool(data.get("higher_is_better", True))
                ),
                dimensions=dims if dims == "rubric" else tuple(str(d) for d in dims),
                prompt=str(data["prompt"]),
                system=str(data.get("system", "")),
                syntax=syntax,
                variables={str(k): str(v) for k, v in dict(data.get("variables", {})).items()},
                constants={str(k): str(v) for k, v in dict(data.get("constants", {})).items()},
                optional=frozenset(str(v) for v in data.get("optional", [])),
                verdict_key=data.get("verdict_key"),
                reason_key=data.get("reason_key"),
                labels={str(k): float(v) for k, v in dict(data.get("labels", {})).items()},
                trace_mapping={str(k): str(v) for k, v in dict(data.get("trace_mapping", {})).items()},
                pairwise=bool(data.get("pairwise", False)),
                criteria_map={str(k): str(v) for k, v in dict(data.get("criteria_map", {})).items()},
                source=data,
            )
        except KeyError as exc:
            raise TemplateError(f"the template has no `{exc.args[0]}`") from None
        except (TypeError, ValueError) as exc:
            raise TemplateError(str(exc)) from None
        return template

    @property
    def placeholders(self) -> tuple[str, ...]:
        """Every variable the prompt and system text use, in order of first use."""
        pattern = SYNTAXES[self.syntax]
        names = pattern.findall(self.system) + pattern.findall(self.prompt)
        return tuple(dict.fromkeys(names))

    @property
    def content_hash(self) -> str:
        """sha256 of everything that decides what is sent and how the answer is read."""
        keep = {k: v for k, v in self.source.items() if k in HASHED}
        return hashlib.sha256(json.dumps(keep, sort_keys=True, ensure_ascii=False).encode()).hexdigest()

    @property
    def scale_warnings(self) -> list[str]:
        """Where the template's own words contradict its declared scale (G-Eval's "Score 1: Excellent")."""
        return scale_conflicts(f"{self.system}\n{self.prompt}", self.scale)

    @cached_property
    def output_spec(self) -> OutputSpec:
        """How its answers are read; the JSON objects of its own text are examples, never an answer."""
        return OutputSpec(
            scale=self.scale,
            verdict_key=self.verdict_key,
            reason_key=self.reason_key,
            labels=self.labels,
            examples=example_objects(self.system, self.prompt, *self.constants.values()),
        )

    def dimension_keys(self, rubric: Rubric) -> tuple[str, ...]:
        return rubric.dimension_keys if self.dimensions == "rubric" else tuple(self.dimensions)

    def values(self, fields: dict[str, str]) -> tuple[dict[str, str], list[str]]:
        """The value of every placeholder from an item's fields, and the ones that cannot be filled."""
        values, problems = {}, []
        for name in self.placeholders:
            if name in self.constants:
                values[name] = self.constants[name]
                continue
            source = self.variables.get(name, name)
            where = f"`{name}`" + (f" (item field `{source}`)" if source != name else "")
            if source not in fields and name in self.optional:
                values[name] = ""
            elif source not in fields:
                problems.append(f"{where} is not a field of the item")
            elif not str(fields[source]).strip() and name not in self.optional:
                problems.append(f"{where} is empty")
            else:
                values[name] = str(fields[source])
        return values, problems

    def render(self, fields: dict[str, str]) -> list[dict[str, str]]:
        """The chat messages for an item. Raises TemplateError naming any variable that cannot be filled."""
        values, problems = self.values(fields)
        if problems:
            raise TemplateError("; ".join(problems))
        pattern = SYNTAXES[self.syntax]

        def fill(text):
            return pattern.sub(lambda m: values[m.group(1)], text)

        messages = [{"role": "system", "content": fill(self.system)}] if self.system else []
        return messages + [{"role": "user", "content": fill(self.prompt)}]


def available_templates() -> list[str]:
    return sorted(p.stem for p in TEMPLATE_DIR.glob("*.json"))


def load_template(name_or_path: str) -> JudgeTemplate:
    path = Path(name_or_path)
    if not path.is_file():
        path = TEMPLATE_DIR / f"{name_or_path}.json"
    if not path.is_file():
        raise TemplateError(f"no template {name_or_path!r}; shipped: {', '.join(available_templates())}")
    try:
        return JudgeTemplate.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except json.JSONDecodeError as exc:
        raise TemplateError(f"{path.name} is not valid JSON: {exc}") from None


def rubric_text(rubric: Rubric) -> str:
    lines = []
    for dim in rubric.dimensions:
        lines.append(f"- {dim.key} ({dim.label}): {dim.description}")
        for value, level in zip(rubric.levels, dim.levels):
            lines.append(f"    {value}: {level}")
    return "\n".join(lines)


def _turn_lines(turns: list[dict[str, str]]) -> list[str]:
    return [f"{t['role']}: {t['content']}" for t in turns]


def _conversation(item) -> tuple[list[str], list[str]]:
    """(every turn ending with the item's response, the turns up to the last user message)."""
    turns = normalise_turns(item.conversation or [])
    if not (
        len(turns) >= 2
        and turns[-1]["role"] == "assistant"
        and turns[-1]["content"] == item.response
        and turns[-2]["content"] == item.prompt
    ):
        turns = turns + [
            {"role": "user", "content": item.prompt},
            {"role": "assistant", "content": item.response},
        ]
    last_user = max((i for i, t in enumerate(turns) if is_user(t)), default=len(turns) - 1)
    return _turn_lines(turns), _turn_lines(turns[: last_user + 1])


def item_fields(item, rubric: Rubric) -> dict[str, str]:
    """Every field a template may use, as text."""
    conversation, thread = _conversation(item)
    fields = {
        key: value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        for key, value in (item.metadata or {}).items()
    }
    fields.update(
        {
            "input": item.prompt,
            "prompt": item.prompt,
            "output": item.response,
            "response": item.response,
            "context": item.context,
            "expected_output": item.expected_output,
            "constraints": "\n".join(f"- {c}" for c in item.constraints or []),
            "conversation": "\n".join(conversation),
            "thread": "\n".join(thread),
            "rubric": rubric_text(rubric),
            "item_id": item.item_id,
            "prompt_id": item.prompt_id,
            "system_id": item.system_id,
        }
    )
    return fields


def pair_fields(baseline, enhanced, rubric: Rubric) -> dict[str, str]:
    """The fields of a pairwise call: the baseline item's, plus both responses under the G-Eval names."""
    fields = item_fields(baseline, rubric)
    fields.update({"baseline_response": baseline.response, "enhanced_response": enhanced.response})
    return fields
