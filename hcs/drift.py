"""Agreement over time and per-annotator drift, as functions on arrays.

Annotations arrive in submission order and are cut into windows: every ``n`` annotations, or
per calendar day. An item belongs to the window in which its last rating arrived (when it
became complete), so each window's agreement is over the items finished in it: Fleiss' κ on
the first k ratings of its items rated at least k times, Krippendorff's α (ordinal) on every
rating of its items. An annotator's drift in a window is their bias there: the mean over
their annotations submitted in the window of (own score − the others' mean on that item).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from hcs.agreement import AgreementError, fleiss_kappa, krippendorff_alpha
from hcs.quality import count_cube
from hcs.quality_rules import (
    EVERY_N,  # the window size, with the other quality defaults
)


def windows_every(n_annotations: int, every: int = EVERY_N) -> npt.NDArray[np.int64]:
    """Window index of each annotation (in submission order) for windows of ``every`` annotations.

    >>> windows_every(5, 2).tolist()
    [0, 0, 1, 1, 2]
    """
    if every < 1:
        raise ValueError("a window needs at least one annotation")
    return np.arange(n_annotations, dtype=np.int64) // every


def windows_by_day(days: Sequence[str]) -> tuple[npt.NDArray[np.int64], list[str]]:
    """Window index per annotation from its day label (``YYYY-MM-DD``), and the labels in order.

    >>> idx, labels = windows_by_day(["2025-01-02", "2025-01-02", "2025-01-04"])
    >>> idx.tolist(), labels
    ([0, 0, 1], ['2025-01-02', '2025-01-04'])
    """
    labels = sorted(set(days))
    index = {d: i for i, d in enumerate(labels)}
    return np.array([index[d] for d in days], dtype=np.int64), labels


@dataclass(frozen=True)
class WindowAgreement:
    window: int
    n_annotations: int  # submitted in the window
    n_items: int  # items completed in the window (rated at least twice)
    fleiss_kappa: dict[str, float | None]
    alpha_ordinal: dict[str, float | None]


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def agreement_over_windows(
    item_index: npt.ArrayLike,
    scores: npt.ArrayLike,
    window: npt.ArrayLike,
    *,
    n_items: int,
    levels: Sequence[int],
    k: int,
    dimensions: Sequence[str],
) -> list[WindowAgreement]:
    """κ and α per dimension for the items completed in each window (rows in submission order)."""
    items = np.asarray(item_index, dtype=np.int64)
    matrix = np.asarray(scores, dtype=float)
    win = np.asarray(window, dtype=np.int64)
    n_windows = int(win.max()) + 1 if len(win) else 0
    completed_in = np.full(n_items, -1, dtype=np.int64)
    completed_in[items] = win  # the last rating of each item wins: rows are in submission order
    everything = count_cube(items, matrix, n_items=n_items, levels=levels)
    first_k = count_cube(items, matrix, n_items=n_items, levels=levels, first_k=k)
    out = []
    for w in range(n_windows):
        mine = completed_in == w
        kappa, alpha = {}, {}
        n_pairable = 0
        for j, dim in enumerate(dimensions):
            table = everything[j][mine]
            table = table[table.sum(axis=1) >= 2]
            n_pairable = max(n_pairable, len(table))
            fk = first_k[j][mine]
            fk = fk[fk.sum(axis=1) == k]
            kappa[dim] = _finite(fleiss_kappa(fk)) if len(fk) else None
            try:
                alpha[dim] = _finite(krippendorff_alpha(table, levels, "ordinal")) if len(table) else None
            except AgreementError:
                alpha[dim] = None
        out.append(WindowAgreement(w, int((win == w).sum()), n_pairable, kappa, alpha))
    return out


def annotator_drift(
    item_index: npt.ArrayLike,
    annotator_index: npt.ArrayLike,
    values: npt.ArrayLike,
    window: npt.ArrayLike,
    *,
    n_items: int,
    n_annotators: int,
) -> npt.NDArray[np.float64]:
    """Annotators × windows: mean of (own value − mean of the others' values on the same item)
    over the annotator's annotations submitted in the window; NaN where there is none.

    >>> annotator_drift([0, 0, 1, 1], [0, 1, 0, 1], [4, 2, 5, 5], [0, 0, 1, 1], n_items=2, n_annotators=2).tolist()
    [[2.0, 0.0], [-2.0, 0.0]]
    """
    items = np.asarray(item_index, dtype=np.int64)
    who = np.asarray(annotator_index, dtype=np.int64)
    v = np.asarray(values, dtype=float)
    win = np.asarray(window, dtype=np.int64)
    ok = np.isfinite(v)
    total = np.bincount(items[ok], weights=v[ok], minlength=n_items)
    count = np.bincount(items[ok], minlength=n_items).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        others = (total[items] - np.where(ok, v, 0.0)) / (count[items] - ok)
    diff = v - others
    use = ok & np.isfinite(diff)
    n_windows = int(win.max()) + 1 if len(win) else 0
    sums = np.zeros((n_annotators, n_windows))
    counts = np.zeros((n_annotators, n_windows))
    np.add.at(sums, (who[use], win[use]), diff[use])
    np.add.at(counts, (who[use], win[use]), 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(counts > 0, sums / counts, np.nan)
