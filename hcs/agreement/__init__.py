"""Inter-rater agreement per rubric dimension: Fleiss' κ, Krippendorff's α, Gwet's AC2.

Input is an items × categories count matrix (how many raters gave each score to
each item), the shape one grouped SQL query returns. A researcher can rebuild it
from an exported long CSV with :func:`counts_from_long` and get the app's numbers:

>>> import numpy as np
>>> items = np.array(["a", "a", "a", "b", "b", "b", "c", "c", "c"])
>>> scores = np.array([5, 5, 4, 2, 2, 2, 3, 4, 4])
>>> counts = counts_from_long(items, scores, categories=[1, 2, 3, 4, 5])
>>> result = dimension_agreement(counts, counts, [1, 2, 3, 4, 5], k=3, n_resamples=200)
>>> round(result.fleiss_kappa, 4), result.fleiss_label, result.fleiss_items_used
(0.3793, 'fair', 3)
>>> round(result.percent_agreement, 2), result.percent_within_one
(55.56, 100.0)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from hcs.agreement.bootstrap import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    Resamples,
    percentile_interval,
)
from hcs.agreement.coefficients import (
    COEFFICIENTS,
    AgreementError,
    Coefficient,
    _alpha_batched,
    _coincidence_features,
    _fleiss_batched,
    _fleiss_features,
    _gwet_batched,
    _gwet_features,
    counts_from_ratings,
    fleiss_kappa,
    gwet_ac2,
    krippendorff_alpha,
    percent_agreement,
    ratings_from_counts,
    weight_matrix,
)
from hcs.agreement.labels import landis_koch
from hcs.numbers import finite_or_none

__all__ = [
    "COEFFICIENTS",
    "AgreementError",
    "Coefficient",
    "DimensionAgreement",
    "bootstrap_intervals",
    "counts_from_long",
    "counts_from_ratings",
    "dimension_agreement",
    "first_k_counts",
    "fleiss_kappa",
    "gwet_ac2",
    "krippendorff_alpha",
    "landis_koch",
    "percent_agreement",
    "ratings_from_counts",
    "weight_matrix",
]

Interval = tuple[float, float] | None


@dataclass(frozen=True)
class DimensionAgreement:
    """Agreement on one dimension. Undefined values are ``None``, never NaN.

    ``values`` and ``ci95`` hold every coefficient of
    :data:`~hcs.agreement.coefficients.COEFFICIENTS` by name; each is also an attribute:
    ``result.gwet_ac2`` and ``result.gwet_ac2_ci95``.
    """

    n_items: int  # items with at least one rating
    n_ratings: int
    n_items_pairable: int  # items with at least two ratings (α, AC2, % agreement)
    fleiss_label: str
    fleiss_items_used: int  # items with at least k ratings, first k taken
    fleiss_items_left_out: int
    distribution: tuple[int, ...]  # ratings per category
    values: dict[str, float | None]  # by coefficient name; percentages are 0–100
    ci95: dict[str, Interval]

    def __getattr__(self, name: str) -> Any:
        # Only called for names that are not fields: a coefficient's value or interval.
        if name.startswith("__") or name in ("values", "ci95"):
            raise AttributeError(name)
        if name.endswith("_ci95") and name[: -len("_ci95")] in self.ci95:
            return self.ci95[name[: -len("_ci95")]]
        if name in self.values:
            return self.values[name]
        raise AttributeError(f"{type(self).__name__!r} has no coefficient or field {name!r}")


def counts_from_long(
    items: npt.ArrayLike, scores: npt.ArrayLike, categories: Sequence[int]
) -> npt.NDArray[np.int64]:
    """Long rows (item, score) → items × categories counts, items in first-seen order.

    Parameters
    ----------
    items : array_like
        The item of each rating (one entry per rating, e.g. the long CSV's ``item_id``).
    scores : array_like
        The score of each rating.
    categories : sequence of int
        The scale, in order.

    Returns
    -------
    numpy.ndarray of int, shape (distinct items, categories)

    Raises
    ------
    AgreementError
        When a score is not one of ``categories``.

    References
    ----------
    Fleiss, J. L. (1971). Measuring nominal scale agreement among many raters. *Psychological
    Bulletin* 76(5), 378–382 (the items × categories layout).
    """
    items = np.asarray(items)
    scores = np.asarray(scores)
    cats = np.asarray(categories)
    _, first, inverse = np.unique(items, return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first))  # rank of each unique item by first appearance
    col = np.searchsorted(cats, scores)
    if (col >= len(cats)).any() or (cats[np.minimum(col, len(cats) - 1)] != scores).any():
        bad = scores[(col >= len(cats)) | (cats[np.minimum(col, len(cats) - 1)] != scores)][0]
        raise AgreementError(f"score {bad} is not one of the categories {list(categories)}")
    out = np.zeros((len(first), len(cats)), dtype=np.int64)
    np.add.at(out, (order[inverse.ravel()], col), 1)
    return out


def first_k_counts(
    items: npt.ArrayLike, scores: npt.ArrayLike, categories: Sequence[int], k: int, *, order: npt.ArrayLike
) -> npt.NDArray[np.int64]:
    """Counts over the first ``k`` ratings of each item rated at least ``k`` times (Fleiss' κ input).

    Parameters
    ----------
    items, scores : array_like
        One entry per rating (long format), in any row order.
    categories : sequence of int
        The rating scale, e.g. ``[1, 2, 3, 4, 5]``.
    k : int
        Ratings per item that Fleiss' κ uses.
    order : array_like
        When each rating was made (datetimes, sequence numbers, or ISO 8601 strings in one time
        zone, such as the ``submitted_at`` column of the long CSV export). The rows are sorted by
        it first, stably, so ratings made at the same moment keep their row order.

    Returns
    -------
    numpy.ndarray
        Items × categories counts, one row per item with at least ``k`` ratings, in first-seen
        order (after sorting); each row sums to ``k``.

    Examples
    --------
    >>> first_k_counts(["a", "a", "a", "a"], [5, 1, 5, 5], [1, 2, 3, 4, 5], k=3, order=[4, 1, 2, 3]).tolist()
    [[1, 0, 0, 0, 2]]
    """
    when = np.asarray(order)
    if when.shape != np.shape(items):
        raise AgreementError(f"order has {when.size} entries for {np.size(items)} ratings")
    by_time = np.argsort(when, kind="stable")
    items = np.asarray(items)[by_time]
    scores = np.asarray(scores)[by_time]
    _, inverse = np.unique(items, return_inverse=True)
    inverse = inverse.ravel()
    order = np.argsort(inverse, kind="stable")
    sorted_items = inverse[order]
    starts = np.searchsorted(sorted_items, sorted_items, side="left")
    rank = np.empty(len(items), dtype=np.int64)
    rank[order] = np.arange(len(items)) - starts
    keep = rank < k
    counts = counts_from_long(items[keep], scores[keep], categories)
    return counts[counts.sum(axis=1) == k]


def bootstrap_intervals(
    counts: npt.ArrayLike,
    categories: Sequence[int],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    resamples: Resamples | None = None,
) -> dict[str, npt.NDArray[np.float64]]:
    """Bootstrap distributions of α (ordinal, interval) and AC2, items resampled together.

    Parameters
    ----------
    counts : array_like, shape (items, categories)
    categories : sequence of int
    n_resamples, seed : int
        How many resamples, and the seed of ``numpy.random.default_rng`` (see the seed rule in
        :mod:`hcs.agreement.bootstrap`).
    resamples : Resamples, optional
        A draw to reuse (so several statistics see the same resamples).

    Returns
    -------
    dict of str to numpy.ndarray
        ``"alpha_ordinal"``, ``"alpha_interval"`` and ``"gwet_ac2"``: one value per resample (NaN
        where undefined); :func:`hcs.agreement.bootstrap.percentile_interval` turns each into a CI.

    References
    ----------
    Efron, B. and Tibshirani, R. J. (1993). *An Introduction to the Bootstrap*. Chapman & Hall,
    ch. 13 (the percentile interval).
    """
    if resamples is None:
        table = np.asarray(counts, dtype=np.int64)
        table = table[table.sum(axis=1) > 0]
        resamples = Resamples.draw(table, n_resamples=n_resamples, seed=seed)
    w = weight_matrix(categories, "ordinal")
    coincidences = _coincidence_features(resamples.patterns)
    return {
        "alpha_ordinal": _alpha_batched(resamples.multiplicity, coincidences, categories, "ordinal"),
        "alpha_interval": _alpha_batched(resamples.multiplicity, coincidences, categories, "interval"),
        "gwet_ac2": _gwet_batched(resamples.multiplicity, _gwet_features(resamples.patterns, w), w),
    }


def fleiss_bootstrap(
    fleiss_counts: npt.ArrayLike,
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    resamples: Resamples | None = None,
) -> npt.NDArray[np.float64]:
    """Bootstrap distribution of Fleiss' κ over the items it uses (all with the same k).

    Parameters
    ----------
    fleiss_counts : array_like, shape (items, categories)
        Rows summing to the same k (see :func:`first_k_counts`).
    n_resamples, seed : int
        As in :func:`bootstrap_intervals`.
    resamples : Resamples, optional
        A draw to reuse.

    Returns
    -------
    numpy.ndarray
        κ per resample (NaN where undefined).

    References
    ----------
    Efron, B. and Tibshirani, R. J. (1993). *An Introduction to the Bootstrap*. Chapman & Hall,
    ch. 13 (the percentile interval).
    """
    table = np.asarray(fleiss_counts, dtype=np.int64)
    if len(table) == 0:
        return np.zeros(0)
    m = int(table[0].sum())
    if resamples is None:
        resamples = Resamples.draw(table, n_resamples=n_resamples, seed=seed)
    return _fleiss_batched(resamples.multiplicity, _fleiss_features(resamples.patterns), m)


def _safe(func, *args) -> float | None:
    try:
        return finite_or_none(func(*args))
    except AgreementError:
        return None


def dimension_agreement(
    counts: npt.ArrayLike,
    fleiss_counts: npt.ArrayLike,
    categories: Sequence[int],
    *,
    k: int,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    coefficients: Sequence[Coefficient] = COEFFICIENTS,
) -> DimensionAgreement:
    """Every coefficient for one dimension, with 95 % bootstrap intervals.

    Parameters
    ----------
    counts : array_like, shape (items, categories)
        All ratings.
    fleiss_counts : array_like, shape (items, categories)
        The first ``k`` ratings of the items rated at least ``k`` times (rows summing to ``k``;
        :func:`first_k_counts`).
    categories : sequence of int
        The scale, in order.
    k : int
        Ratings per item the study asked for.
    n_resamples : int
        Bootstrap resamples; 0 skips the intervals.
    seed : int
        Seed of the resampling (see the seed rule in :mod:`hcs.agreement.bootstrap`).
    coefficients : sequence of Coefficient
        What to compute; by default every one of :data:`~hcs.agreement.coefficients.COEFFICIENTS`.

    Returns
    -------
    DimensionAgreement
        Fleiss' κ with its Landis–Koch label, Krippendorff's α (ordinal and interval), Gwet's AC2,
        percent agreement (exact and within one level) and every further coefficient of the table,
        each interval by the percentile rule; undefined values are ``None``.

    References
    ----------
    Fleiss (1971), Krippendorff (2011) and Gwet (2014), as for :func:`fleiss_kappa`,
    :func:`krippendorff_alpha` and :func:`gwet_ac2`. Landis, J. R. and Koch, G. G. (1977). The
    measurement of observer agreement for categorical data. *Biometrics* 33(1), 159–174.
    Efron and Tibshirani (1993) for the percentile bootstrap.
    """
    tables = _tables(counts, fleiss_counts, categories, k)
    table, fleiss_table = tables["all"], tables["first_k"]
    values = {
        c.name: _safe(c.point, tables[c.rows], categories) if len(tables[c.rows]) else None
        for c in coefficients
    }
    ci95 = _intervals(tables, categories, coefficients, values, n_resamples=n_resamples, seed=seed)
    return DimensionAgreement(
        n_items=len(table),
        n_ratings=int(table.sum()),
        n_items_pairable=int((table.sum(axis=1) >= 2).sum()),
        fleiss_label=landis_koch(values.get("fleiss_kappa")),
        fleiss_items_used=len(fleiss_table),
        fleiss_items_left_out=len(table) - len(fleiss_table),
        distribution=tuple(int(x) for x in table.sum(axis=0)) if len(table) else (0,) * len(categories),
        values=values,
        ci95=ci95,
    )


def _tables(
    counts: npt.ArrayLike, fleiss_counts: npt.ArrayLike, categories: Sequence[int], k: int
) -> dict[str, npt.NDArray[np.int64]]:
    """The two count tables a coefficient reads, by ``Coefficient.rows``: every rated item, and the
    first k ratings of the items rated at least k times."""
    table = np.asarray(counts, dtype=np.int64).reshape(-1, len(categories))
    table = table[table.sum(axis=1) > 0]
    fleiss_table = np.asarray(fleiss_counts, dtype=np.int64).reshape(-1, len(categories))
    if len(fleiss_table) and (fleiss_table.sum(axis=1) != k).any():
        raise AgreementError(f"every row of fleiss_counts must hold exactly k={k} ratings")
    return {"all": table, "first_k": fleiss_table}


def _intervals(
    tables: dict[str, npt.NDArray[np.int64]],
    categories: Sequence[int],
    coefficients: Sequence[Coefficient],
    values: dict[str, float | None],
    *,
    n_resamples: int,
    seed: int,
) -> dict[str, Interval]:
    """The percentile interval of each defined coefficient that has a bootstrap, from one draw per
    table (both tables the same draw when every item has exactly k ratings)."""
    ci95: dict[str, Interval] = {c.name: None for c in coefficients}
    wanted = [c for c in coefficients if c.resampled is not None and values[c.name] is not None]
    if n_resamples <= 0 or not wanted:
        return ci95
    table, fleiss_table = tables["all"], tables["first_k"]
    pairable = bool((table.sum(axis=1) >= 2).any())
    full = Resamples.draw(table, n_resamples=n_resamples, seed=seed) if pairable else None
    same = full is not None and fleiss_table.shape == table.shape and np.array_equal(fleiss_table, table)
    draws: dict[str, Resamples | None] = {"all": full, "first_k": full if same else None}
    for c in wanted:
        if draws[c.rows] is None and c.rows == "first_k":
            draws["first_k"] = Resamples.draw(tables["first_k"], n_resamples=n_resamples, seed=seed)
        draw = draws[c.rows]
        ci95[c.name] = percentile_interval(c.resampled(draw, categories)) if draw is not None else None
    return ci95
