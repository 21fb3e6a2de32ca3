"""Agreement over time for the report: windows of submissions (every N, and per day), κ and α per
dimension over the items completed in each window (excluded annotators left out), and each
annotator's drift (bias against the others) per window."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hcs.drift import (
    EVERY_N,
    WindowAgreement,
    agreement_over_windows,
    annotator_drift,
    windows_by_day,
    windows_every,
)
from hcs.scoring import overall_per_annotation


@dataclass(frozen=True, eq=False)
class Series:
    labels: list[str]  # one per window: "1–50" or a day
    windows: list  # hcs.drift.WindowAgreement
    drift: dict[str, list[float | None]]  # annotator → overall-HCS bias per window

    def to_json(self) -> dict[str, Any]:
        return {
            "windows": [
                {
                    "window": label,
                    "n_annotations": w.n_annotations,
                    "n_items": w.n_items,
                    "dimensions": {
                        d: {
                            "fleiss_kappa": w.fleiss_kappa[d],
                            "krippendorff_alpha_ordinal": w.alpha_ordinal[d],
                        }
                        for d in w.fleiss_kappa
                    },
                }
                for label, w in zip(self.labels, self.windows)
            ],
            "annotator_drift": self.drift,
        }


@dataclass(frozen=True, eq=False)
class OverTime:
    every: int
    every_n: Series
    per_day: Series

    def to_json(self) -> dict[str, Any]:
        return {"every_n": {"size": self.every, **self.every_n.to_json()}, "per_day": self.per_day.to_json()}


def _series(batch, arrays, order, keep, window, labels) -> Series:
    rubric = batch.rubric_obj
    items, scores = arrays.annotation_item[order], arrays.annotation_scores[order]
    windows = agreement_over_windows(
        items[keep],
        scores[keep],
        window[keep],
        n_items=len(arrays.item_pk),
        levels=rubric.levels,
        k=batch.k,
        dimensions=rubric.dimension_keys,
    )
    overall = overall_per_annotation(scores, np.array([d.weight for d in rubric.dimensions]))
    drift = annotator_drift(
        items,
        arrays.annotation_annotator[order],
        overall,
        window,
        n_items=len(arrays.item_pk),
        n_annotators=len(arrays.annotator_names),
    )
    n = len(labels)
    windows = _pad(windows, n, rubric.dimension_keys)
    return Series(
        labels=labels,
        windows=windows,
        drift={
            name: [None if not np.isfinite(v) else float(v) for v in row[:n]] + [None] * (n - row.shape[0])
            for name, row in zip(arrays.annotator_names, drift)
        },
    )


def _pad(windows, n, dims):
    """A window whose annotations were all left out still gets a row (with no agreement)."""
    by_index = {w.window: w for w in windows}
    return [
        by_index.get(i) or WindowAgreement(i, 0, 0, dict.fromkeys(dims), dict.fromkeys(dims))
        for i in range(n)
    ]


def over_time(*, batch, arrays, order, keep, days: list[str], every: int = EVERY_N) -> OverTime:
    """``order``: array rows in submission order; ``keep``: per row in that order, False for
    excluded annotators; ``days``: the submission day of each row in that order."""
    n = len(order)
    every_window = windows_every(n, every)
    n_every = int(every_window.max()) + 1 if n else 0
    labels = [f"{i * every + 1}\u2013{min((i + 1) * every, n)}" for i in range(n_every)]
    day_window, day_labels = windows_by_day(days)
    return OverTime(
        every=every,
        every_n=_series(batch, arrays, order, keep, every_window, labels),
        per_day=_series(batch, arrays, order, keep, day_window, day_labels),
    )
