"""PPI++ estimates of the human mean from a judge on every item and people on some (``hcs.ppi``).

Per judge × dimension (and overall HCS) the target is the mean, over the batch's items, of each item's
human mean. Labelled items have a valid human value (excluded annotators already left out of the
report's arrays) and a judge score; unlabelled items have a judge score and no human value. Items
without a judge score take no part. The same is done within each system so systems can be ranked.

When the batch has a review draw in force (``annotator.judges.selectors.draws``), the labels were not a
random sample: the estimate is then active inference (``hcs.routing.active_ppi_mean``) over the draw's
population, each label weighted by 1/π. Labels of items the draw did not select are left out, and so are
items outside its population, so nothing is mixed in unweighted. Without a draw, the estimate is given only
when the labelled set is a random sample (``annotator.judges.selectors.sample``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from annotator.judges.selectors.draws import DrawDesign
from annotator.judges.selectors.sample import LabelledSample
from hcs.ppi import PPIMean, ppi_mean
from hcs.routing import active_ppi_mean, labelled_so_far

WHY_WEIGHTED = (
    "the labels were drawn by a recorded review draw with probabilities π that follow the judge's "
    "uncertainty, so they are not a random sample; each label is weighted by 1/π (active inference, "
    "Zrnic & Candès 2024), which keeps the estimate unbiased"
)


@dataclass(frozen=True)
class DrawUse:
    """How a recorded draw's labels entered one estimate (one judge × dimension, over all systems)."""

    draw_id: int
    budget: int
    seed: int
    n_drawn: int  # items the draw selected (π < 1 possible), judged on this dimension
    n_drawn_labelled: int  # of them, with a human value so far
    n_labelled_before: int  # items labelled before the draw: in with π = 1
    n_labels_not_used: int  # items of the population labelled without being selected (e.g. the regular queue)
    n_outside: (
        int  # judged items outside the draw's population (not judged, or not in the batch, at the draw)
    )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.draw_id,
            "budget": self.budget,
            "seed": self.seed,
            "n_drawn": self.n_drawn,
            "n_drawn_labelled": self.n_drawn_labelled,
            "n_labelled_before": self.n_labelled_before,
            "n_labels_not_used": self.n_labels_not_used,
            "n_items_outside": self.n_outside,
            "why": WHY_WEIGHTED,
        }


@dataclass(frozen=True)
class JudgePPI:
    judge: str
    dimension: str
    label: str
    overall: PPIMean | None
    by_system: dict[str, PPIMean | None] = field(default_factory=dict)
    draw: DrawUse | None = None  # set when the estimate weights a recorded draw's labels
    sample: LabelledSample | None = None  # what the labelled items are a sample of (``selectors.sample``)

    @property
    def estimated(self) -> bool:
        """False when the labelled set is not a random sample: no estimate or interval is shown."""
        return self.sample is None or self.sample.random

    def _entry(self, result: PPIMean | None) -> dict[str, Any] | None:
        if result is None:
            return None
        out = result.to_json()
        if not self.estimated:
            # Computed from labels that are not a random sample: the estimate would be biased by as much as
            # the choice of items was, so it and its intervals are withheld. The counts stay, and so does the
            # plain mean of the labelled items (human_only), which describes those items only.
            for key in list(out):
                if key == "estimate" or key.startswith("ci95"):
                    out[key] = None
        return out

    def to_json(self) -> dict[str, Any] | None:
        sample = self.sample.to_json() if self.sample else {}
        if self.overall is None:
            if self.draw is None:
                return None
            # A draw in force whose picked items have no label yet: no estimate, and the counts say why.
            return {"estimator": "active_inference", "estimate": None, "draw": self.draw.to_json(), **sample}
        return {**self._entry(self.overall), **({"draw": self.draw.to_json()} if self.draw else {}), **sample}

    def by_system_json(self) -> dict[str, Any]:
        return {name: self._entry(r) for name, r in self.by_system.items()}

    def systems(self) -> list[tuple[str, PPIMean]]:
        """Systems with an estimate, highest first (the ranking a reader compares intervals on); none when the
        labelled set is not a random sample."""
        if not self.estimated:
            return []
        return sorted(
            ((s, r) for s, r in self.by_system.items() if r is not None), key=lambda sr: -sr[1].estimate
        )


def _split(human: np.ndarray, judged: dict[int, float], rows: np.ndarray | None = None):
    """(human values, judge scores) of labelled items and judge scores of unlabelled ones, in item order."""
    items, scores = _judged_items(judged, rows)
    h = human[items] if len(items) else np.zeros(0)
    labelled = np.isfinite(h)
    return h[labelled], scores[labelled], scores[~labelled]


def _judged_items(judged: dict[int, float], rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    items = np.array(sorted(judged), dtype=np.int64)
    if rows is not None:
        items = items[np.isin(items, rows)]
    scores = np.array([judged[int(i)] for i in items], dtype=float)
    ok = np.isfinite(scores)
    return items[ok], scores[ok]


def _weighted(
    human: np.ndarray, judged: dict[int, float], design: DrawDesign, rows: np.ndarray | None = None
):
    """Active inference over the draw's population: (estimate or None, how the draw's labels entered it).

    A selected item counts as labelled once it has a human value. While some selected items still wait for
    one, π of each stratum (drawn, labelled before) is scaled by the share labelled (``labelled_so_far``):
    the draw queued its items in a random order, so the ones labelled so far are a random part of it."""
    items, f = _judged_items(judged, rows)
    inside = np.isfinite(design.pi[items]) if len(items) else np.zeros(0, dtype=bool)
    outside = int((~inside).sum())
    items, f = items[inside], f[inside]
    pi, selected, before = design.pi[items], design.selected[items], design.before[items]
    y = human[items] if len(items) else np.zeros(0)
    labelled = np.isfinite(y)
    xi, pi_used = labelled_so_far(pi, selected, labelled, strata=before)
    use = DrawUse(
        draw_id=design.draw_id,
        budget=design.budget,
        seed=design.seed,
        n_drawn=int((selected & ~before).sum()),
        n_drawn_labelled=int((xi & ~before).sum()),
        n_labelled_before=int((xi & before).sum()),
        n_labels_not_used=int((labelled & ~selected).sum()),
        n_outside=outside,
    )
    return active_ppi_mean(np.where(xi, y, 0.0), f, xi, pi_used), use


def judge_ppi(
    *,
    judge: str,
    dimension: str,
    label: str,
    human_mean: np.ndarray,
    judged: dict[int, float],
    item_system: np.ndarray,
    system_names: list[str],
    design: DrawDesign | None = None,
    sample: LabelledSample | None = None,
) -> JudgePPI:
    """PPI++ over all items and within each system; with a recorded draw (``design``), active inference.

    ``human_mean``: per item row, the mean human value (NaN: nobody rated it); ``judged``: {item row: judge
    score on the rubric scale}; ``item_system``: system index per item row."""
    if design is not None:
        overall, use = _weighted(human_mean, judged, design)
        by_system = {
            name: _weighted(human_mean, judged, design, np.flatnonzero(item_system == s))[0]
            for s, name in enumerate(system_names)
        }
        return JudgePPI(judge, dimension, label, overall, by_system, draw=use, sample=sample)
    overall = ppi_mean(*_split(human_mean, judged))
    by_system = {
        name: ppi_mean(*_split(human_mean, judged, np.flatnonzero(item_system == s)))
        for s, name in enumerate(system_names)
    }
    return JudgePPI(
        judge=judge, dimension=dimension, label=label, overall=overall, by_system=by_system, sample=sample
    )


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
