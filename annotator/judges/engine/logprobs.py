"""The score token's distribution of each dimension of one answer, from the call's token logprobs."""

from __future__ import annotations

from annotator.judges.engine.templates import JudgeTemplate
from hcs.calibration.logprobs import (
    ScoreDistribution,
    distribution,
    integer_scale,
    score_token,
)


def score_distributions(
    logprobs: list[tuple[str, list[tuple[str, float]]]] | None,
    scores: dict[str, dict],
    template: JudgeTemplate,
) -> dict[str, ScoreDistribution]:
    """dimension → the distribution of the token that wrote its score; empty without logprobs or on a
    scale whose scores are not single tokens (0–1)."""
    values = integer_scale(template.scale.min, template.scale.max)
    if not logprobs or values is None:
        return {}
    tokens = [token for token, _ in logprobs]
    key = template.verdict_key or "score"
    several = len(scores) > 1 or set(scores) != {"overall"}
    found = {}
    for dimension, score in scores.items():
        after = f'"{dimension}"' if several else None
        index = score_token(tokens, score["raw"], key=key, after=after)
        if index is None and after is not None:
            index = score_token(tokens, score["raw"], key=dimension)
        if index is None:
            continue
        dist = distribution(logprobs[index][1], values)
        if dist is not None:
            found[dimension] = dist
    return found
