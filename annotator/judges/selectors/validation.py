"""PPI++ estimates of the human mean from a judge on every item and people on some (``hcs.ppi``).

Per judge × dimension (and overall HCS) the target is the mean, over the batch's items, of each item's
human mean. Labelled items have a valid human value (excluded annotators already left out of the
report's arrays) and a judge score; unlabelled items have a judge score and no human value. Items
without a judge score take no part. The same is done within each system so systems can be ranked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hcs.ppi import PPIMean, ppi_mean


@dataclass(frozen=True)
class JudgePPI:
    judge: str
    dimension: str
    label: str
    overall: PPIMean | None
    by_system: dict[str, PPIMean | None] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any] | None:
        return None if self.overall is None else self.overall.to_json()

    def by_system_json(self) -> dict[str, Any]:
        return {name: (None if r is None else r.to_json()) for name, r in self.by_system.items()}

    def systems(self) -> list[tuple[str, PPIMean]]:
        """Systems with an estimate, highest first (the ranking a reader compares intervals on)."""
        return sorted(
            ((s, r) for s, r in self.by_system.items() if r is not None), key=lambda sr: -sr[1].estimate
        )


def _split(human: np.ndarray, judged: dict[int, float], rows: np.ndarray | None = None):
    """(human values, judge scores) of labelled items and judge scores of unlabelled ones, in item order."""
    items = np.array(sorted(judged), dtype=np.int64)
    if rows is not None:
        items = items[np.isin(items, rows)]
    scores = np.array([judged[int(i)] for i in items], dtype=float)
    ok = np.isfinite(scores)
    items, scores = items[ok], scores[ok]
    h = human[items] if len(items) else np.zeros(0)
    labelled = np.isfinite(h)
    return h[labelled], scores[labelled], scores[~labelled]


def judge_ppi(
    *,
    judge: str,
    dimension: str,
    label: str,
    human_mean: np.ndarray,
    judged: dict[int, float],
    item_system: np.ndarray,
    system_names: list[str],
) -> JudgePPI:
    """PPI++ over all items and within each system.

    ``human_mean``: per item row, the mean human value (NaN: nobody rated it); ``judged``: {item row: judge
    score on the rubric scale}; ``item_system``: system index per item row."""
    overall = ppi_mean(*_split(human_mean, judged))
    by_system = {
        name: ppi_mean(*_split(human_mean, judged, np.flatnonzero(item_system == s)))
        for s, name in enumerate(system_names)
    }
    return JudgePPI(judge=judge, dimension=dimension, label=label, overall=overall, by_system=by_system)


def judge_overall_scores(
    dimension_scores: dict[str, dict[int, float]], weights: dict[str, float]
) -> dict[int, float]:
    """A judge's overall HCS per item from its dimension scores (Σ weight × score), for items it scored on every
    dimension; used when the judge gave no overall score of its own."""
    if not weights or any(key not in dimension_scores for key in weights):
        return {}
    common = set.intersection(*(set(dimension_scores[key]) for key in weights))
    return {
        item: round(sum(w * dimension_scores[key][item] for key, w in weights.items()), 10) for item in common
    }
