"""The structured-output request of a scoring template: a JSON schema whose answer the output parser reads.

The schema asks, per dimension, for a reason and then the score (reason first, so the model reasons before
it commits to a number), the score within the template's scale (an integer on an integer scale), and a
label from the template's verdict labels where it has them. The keys are the template's own verdict and
reason keys, so the answer is read exactly as a free-text JSON answer would be.
"""

from __future__ import annotations

from typing import Any

from annotator.judges.engine.templates import JudgeTemplate
from hcs.calibration.logprobs import integer_scale
from hcs.rubric import Rubric

SCORE_KEY, REASON_KEY, LABEL_KEY = "score", "reason", "label"


def _one(template: JudgeTemplate) -> dict[str, Any]:
    scale = template.scale
    integer = integer_scale(scale.min, scale.max) is not None
    score = {
        "type": "integer" if integer else "number",
        "minimum": scale.min if not integer else int(scale.min),
        "maximum": scale.max if not integer else int(scale.max),
    }
    reason_key, score_key = template.reason_key or REASON_KEY, template.verdict_key or SCORE_KEY
    properties: dict[str, Any] = {reason_key: {"type": "string"}, score_key: score}
    if template.labels:
        properties[LABEL_KEY] = {"type": "string", "enum": list(template.labels)}
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def response_format(template: JudgeTemplate, rubric: Rubric) -> dict[str, Any] | None:
    """The ``response_format`` of a chat-completions request for ``template``; None for a pairwise template,
    whose verdict and criteria are read from free text."""
    if template.pairwise:
        return None
    dimensions = template.dimension_keys(rubric)
    if tuple(dimensions) == ("overall",):
        schema = _one(template)
    else:
        schema = {
            "type": "object",
            "properties": {d: _one(template) for d in dimensions},
            "required": list(dimensions),
            "additionalProperties": False,
        }
    name = "".join(c if c.isalnum() or c in "_-" else "_" for c in template.name)[:64] or "judge"
    return {"type": "json_schema", "json_schema": {"name": name, "strict": True, "schema": schema}}
