"""Judge prompt templates: JSON files under ``fixtures/judge_templates/`` (or any path).

A template declares its raw scale and direction, which dimensions its output scores (``"rubric"`` for the
batch rubric's dimensions, or a list such as ``["overall"]``), optional verdict/reason keys, and a prompt
with ``{{variables}}``: ``input`` (the item's prompt), ``output`` (the response), ``context``,
``expected_output``, ``constraints``, ``conversation`` (the item's turns, one ``role: content`` per line),
``thread`` (the turns ending with the user's prompt, for rules about the last user message) and ``rubric``
(the dimensions with their level descriptions).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hcs.judge_output import JudgeScale
from hcs.rubric import Rubric

TEMPLATE_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "judge_templates"
_VARIABLE = re.compile(r"\{\{\s*([a-z_]+)\s*\}\}")
VARIABLES = ("input", "output", "context", "expected_output", "constraints", "conversation", "thread", "rubric")


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
    verdict_key: str | None = None
    reason_key: str | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JudgeTemplate:
        try:
            dims = data.get("dimensions", ["overall"])
            template = cls(
                name=str(data["name"]),
                version=str(data.get("version", "")),
                description=str(data.get("description", "")),
                scale=JudgeScale.parse(str(data["scale"]), higher_is_better=bool(data.get("higher_is_better", True))),
                dimensions=dims if dims == "rubric" else tuple(str(d) for d in dims),
                prompt=str(data["prompt"]),
                system=str(data.get("system", "")),
                verdict_key=data.get("verdict_key"),
                reason_key=data.get("reason_key"),
            )
        except KeyError as exc:
            raise TemplateError(f"the template has no `{exc.args[0]}`") from None
        except ValueError as exc:
            raise TemplateError(str(exc)) from None
        unknown = sorted(set(_VARIABLE.findall(template.prompt)) - set(VARIABLES))
        if unknown:
            raise TemplateError(f"the template uses unknown variables: {', '.join(unknown)}")
        return template

    def dimension_keys(self, rubric: Rubric) -> tuple[str, ...]:
        return rubric.dimension_keys if self.dimensions == "rubric" else tuple(self.dimensions)

    def render(self, variables: dict[str, str]) -> list[dict[str, str]]:
        user = _VARIABLE.sub(lambda m: variables.get(m.group(1), ""), self.prompt)
        messages = [{"role": "system", "content": self.system}] if self.system else []
        return messages + [{"role": "user", "content": user}]


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


def item_variables(item, rubric: Rubric) -> dict[str, str]:
    turns = []
    for turn in item.conversation or []:
        if isinstance(turn, dict):
            turns.append(f"{turn.get('role', 'turn')}: {turn.get('content', '')}")
        else:
            turns.append(str(turn))
    thread = list(turns)
    users = [t for t in item.conversation or [] if isinstance(t, dict) and t.get("role") == "user"]
    if not users or users[-1].get("content") != item.prompt:
        thread.append(f"user: {item.prompt}")
    else:  # a thread item: its turns already end with the prompt and its response; stop at the prompt
        last = max(i for i, t in enumerate(item.conversation) if isinstance(t, dict) and t.get("role") == "user")
        thread = turns[: last + 1]
    return {
        "input": item.prompt,
        "thread": "\n".join(thread),
        "output": item.response,
        "context": item.context,
        "expected_output": item.expected_output,
        "constraints": "\n".join(f"- {c}" for c in item.constraints or []),
        "conversation": "\n".join(turns),
        "rubric": rubric_text(rubric),
    }
