"""Overall HCS, systems ranked, per-annotator quality and the disagreement list.

Pure numpy on arrays: one row per annotation (its item, its annotator and its
scores per dimension, NaN where a dimension was not rated).

>>> import numpy as np
>>> scores = np.array([[5, 5, 5, 5, 5], [3, 3, 3, 3, 3], [4, 4, 4, 4, 4.]])
>>> overall_per_annotation(scores, np.array([0.4, 0.2, 0.2, 0.1, 0.1])).tolist()
[5.0, 3.0, 4.0]
>>> s = item_summaries(np.array([0, 0, 1]), np.array([5.0, 3.0, 4.0]), n_items=2)
>>> s.mean.tolist(), s.sd.tolist()[0], s.n.tolist()
([4.0, 4.0], 1.4142135623730951, [2, 1])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from hcs.agreement.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED, percentile_interval
from hcs.numbers import finite_or_none
from hcs.quality_rules import MIN_SHARED_ITEMS

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

# Outlier rule: an annotator is flagged when their mean bias on the overall score is
# at least BIAS_POINTS away from the others, or when a robust z-score (median and
# MAD over annotators) of their bias or of their leave-one-out Spearman is beyond
# ROBUST_Z (needs at least MIN_ANNOTATORS_FOR_Z annotators). Only annotators with at least
# MIN_SHARED_ITEMS items shared with others are flagged, or count towards the robust z-scores.
BIAS_POINTS = 1.0
ROBUST_Z = 3.5
MIN_ANNOTATORS_FOR_Z = 4


def overall_per_annotation(scores: FloatArray, weights: FloatArray) -> FloatArray:
    """Weighted overall score of each annotation; NaN when any dimension is unrated.

    Parameters
    ----------
    scores : numpy.ndarray, shape (annotations, dimensions)
        NaN where a dimension was not rated.
    weights : numpy.ndarray, shape (dimensions,)
        The rubric's weights (HCS: 0.40, 0.20, 0.20, 0.10, 0.10).

    Returns
    -------
    numpy.ndarray
        Rounded to 10 decimals, so equal scores give equal overall values.

    References
    ----------
    The HCS rubric (``hcs/rubrics/hcs.json``, ``HCS_rubric.md``): Overall = Σ weight × score.
    """
    return np.round(np.asarray(scores, dtype=float) @ np.asarray(weights, dtype=float), 10)


@dataclass(frozen=True)
class ItemSummaries:
    mean: FloatArray  # per item, NaN if no complete annotation
    sd: FloatArray  # sample standard deviation over annotators, NaN if fewer than 2
    n: IntArray


def item_summaries(item_index: IntArray, values: FloatArray, *, n_items: int) -> ItemSummaries:
    """Mean and spread of ``values`` per item (annotations with NaN values skipped).

    Parameters
    ----------
    item_index : numpy.ndarray of int
        The item row of each annotation.
    values : numpy.ndarray
        One value per annotation (e.g. its overall score).
    n_items : int

    Returns
    -------
    ItemSummaries
        Per item: mean (NaN if none), sample standard deviation (ddof = 1; NaN if fewer than two)
        and count.
    """
    ok = np.isfinite(values)
    idx, vals = item_index[ok], values[ok]
    n = np.bincount(idx, minlength=n_items)
    total = np.bincount(idx, weights=vals, minlength=n_items)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = total / n
        sq = np.bincount(idx, weights=(vals - mean[idx]) ** 2, minlength=n_items)
        sd = np.sqrt(sq / (n - 1))
    sd[n < 2] = np.nan
    return ItemSummaries(mean=mean, sd=sd, n=n)


# ------------------------------------------------------------------ systems
@dataclass(frozen=True)
class SystemScore:
    system: str
    rank: int
    mean: float | None
    ci95: tuple[float, float] | None
    n_items: int


def rank_systems(
    item_means: FloatArray,
    item_system: IntArray,
    system_names: Sequence[str],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> list[SystemScore]:
    """Mean overall score per system over its items, a bootstrap CI resampling items, ranked.

    Resampling draws, for every resample, item multiplicities from a multinomial
    (the same resampling as drawing items with replacement) and takes the
    weighted mean: one matrix product per system.

    Parameters
    ----------
    item_means : numpy.ndarray
        Mean overall score per item (NaN: not rated completely).
    item_system : numpy.ndarray of int
        System index per item.
    system_names : sequence of str
    n_resamples, seed : int
        Bootstrap resamples (0: no intervals) and their seed.

    Returns
    -------
    list of SystemScore
        Highest mean first (systems without a mean last), each with its 95 % percentile interval.

    References
    ----------
    Efron, B. and Tibshirani, R. J. (1993). *An Introduction to the Bootstrap*. Chapman & Hall, ch. 13.
    """
    rng = np.random.default_rng(seed)
    out = []
    for s, name in enumerate(system_names):
        values = item_means[(item_system == s) & np.isfinite(item_means)]
        n = len(values)
        mean = float(values.mean()) if n else None
        ci = None
        if n >= 2 and n_resamples > 0:
            # Items with the same mean are interchangeable: draw multiplicities of distinct values.
            # Means of scores on a fixed grid take few distinct values; rounding away float noise
            # keeps them few (the CI is unchanged at this precision).
            distinct, frequency = np.unique(np.round(values, 9), return_counts=True)
            mult = rng.multinomial(n, frequency / n, size=n_resamples)
            ci = percentile_interval(mult @ distinct / n)
        out.append(SystemScore(system=name, rank=0, mean=mean, ci95=ci, n_items=n))
    ordered = sorted(out, key=lambda s: (s.mean is None, -(s.mean or 0.0), s.system))
    return [
        SystemScore(system=s.system, rank=i + 1, mean=s.mean, ci95=s.ci95, n_items=s.n_items)
        for i, s in enumerate(ordered)
    ]


# ------------------------------------------------------------------ annotators
@dataclass(frozen=True)
class AnnotatorQuality:
    annotator: str
    n_items: int
    mean: dict[str, float | None]  # per dimension, and "overall"
    bias: dict[str, float | None]  # mean of (own score − others' mean) on shared items
    spearman_loo: dict[str, float | None]  # Spearman with the others' mean on shared items
    outlier: bool
    reasons: tuple[str, ...]
    n_shared: dict[str, int]  # items behind bias and ρ: rated by the annotator and someone else


def _others_mean(item_index: IntArray, values: FloatArray, n_items: int) -> FloatArray:
    """For each annotation, the mean of the other annotations of the same item (NaN if none)."""
    ok = np.isfinite(values)
    v = np.where(ok, values, 0.0)
    total = np.bincount(item_index, weights=v, minlength=n_items)
    count = np.bincount(item_index, weights=ok.astype(float), minlength=n_items)
    with np.errstate(divide="ignore", invalid="ignore"):
        others = (total[item_index] - v) / (count[item_index] - ok)
    others[~ok] = np.nan
    return others


# Scores are whole numbers, overall scores carry weights in tenths, and a mean of up to ten of them
# has a denominator dividing 2520: every such value is a whole multiple of 1 / GRID.
GRID = 25_200


def _codes(values: FloatArray) -> tuple[IntArray, int]:
    """Each value's position among the distinct finite values (−1 for NaN), and how many there are."""
    ok = np.isfinite(values)
    codes = np.full(len(values), -1, dtype=np.int64)
    finite = values[ok]
    if len(finite) and np.ptp(finite) < 100:
        # Values on the grid of means of scores (float noise aside): codes by a lookup table, no sort.
        # Distinct grid values lie 1 / GRID apart, far beyond the tolerance, so none are merged.
        low = finite.min()
        steps = np.rint((finite - low) * GRID)
        if np.abs(steps / GRID + low - finite).max() <= 1e-9:
            shifted = steps.astype(np.int64)
            present = np.bincount(shifted) > 0
            codes[ok] = (np.cumsum(present) - 1)[shifted]
            return codes, int(present.sum())
    distinct, inverse = np.unique(finite, return_inverse=True)
    codes[ok] = inverse.ravel()
    return codes, len(distinct)


def _average_ranks(codes: IntArray, n_distinct: int) -> FloatArray:
    """Ranks 1..n with ties given their average rank (as ``scipy.stats.rankdata``), in O(n)
    from value codes that are already in sorted order."""
    counts = np.bincount(codes, minlength=n_distinct)
    upper = np.cumsum(counts)
    return ((upper - counts + 1 + upper) / 2.0)[codes]


def _spearman_coded(cx: IntArray, nx: int, cy: IntArray, ny: int) -> float | None:
    """Spearman's ρ (Pearson on average ranks, as ``scipy.stats.spearmanr``); None if undefined."""
    if len(cx) < 3 or cx.min() == cx.max() or cy.min() == cy.max():
        return None
    rx, ry = _average_ranks(cx, nx), _average_ranks(cy, ny)
    rx -= rx.mean()
    ry -= ry.mean()
    return finite_or_none(float((rx @ ry) / np.sqrt((rx @ rx) * (ry @ ry))))


def _robust_z(values: list[float | None]) -> list[float | None]:
    finite = np.array([v for v in values if v is not None], dtype=float)
    if len(finite) < MIN_ANNOTATORS_FOR_Z:
        return [None] * len(values)
    med = np.median(finite)
    mad = 1.4826 * np.median(np.abs(finite - med))
    if mad == 0:
        return [None] * len(values)
    return [None if v is None else (v - med) / mad for v in values]


def annotator_quality(
    item_index: IntArray,
    annotator_index: IntArray,
    scores: FloatArray,
    overall: FloatArray,
    *,
    dimensions: Sequence[str],
    annotator_names: Sequence[str],
    n_items: int,
) -> list[AnnotatorQuality]:
    """Per annotator: items rated, means, bias and leave-one-out Spearman, outlier flag.

    Parameters
    ----------
    item_index, annotator_index : numpy.ndarray of int
        Item row and annotator index of each annotation.
    scores : numpy.ndarray, shape (annotations, dimensions)
        NaN where not rated.
    overall : numpy.ndarray
        Overall score per annotation (:func:`overall_per_annotation`).
    dimensions : sequence of str
    annotator_names : sequence of str
        Indexed by ``annotator_index``.
    n_items : int

    Returns
    -------
    list of AnnotatorQuality
        An annotator is an outlier when their overall bias is at least ``BIAS_POINTS`` from the
        others', or when a robust z-score (median and MAD over annotators) of their bias or their
        leave-one-out Spearman is beyond ``ROBUST_Z`` (with at least ``MIN_ANNOTATORS_FOR_Z``).
        Only annotators with at least ``MIN_SHARED_ITEMS`` shared items (``n_shared["overall"]``)
        are flagged or enter the robust z-scores.

    References
    ----------
    Iglewicz, B. and Hoaglin, D. C. (1993). *How to Detect and Handle Outliers*. ASQC Quality Press
    (the modified z-score, median ± 3.5 MAD-based units). Spearman, C. (1904). The proof and
    measurement of association between two things. *American Journal of Psychology* 15(1), 72–101.
    Zar, J. H. (1972). Significance testing of the Spearman rank correlation coefficient. *Journal
    of the American Statistical Association* 67(339), 578–580 (critical values of ρ by n).

    Examples
    --------
    Three items shared, scored in reverse: ρ = −1, but too few items to flag.

    >>> item = np.array([0, 0, 1, 1, 2, 2]); ann = np.array([0, 1, 0, 1, 0, 1])
    >>> s = np.array([1.0, 5.0, 3.0, 3.0, 5.0, 1.0])[:, None]
    >>> a = annotator_quality(item, ann, s, s[:, 0], dimensions=["d"], annotator_names=["x", "y"],
    ...                       n_items=3)[0]
    >>> a.spearman_loo["overall"], a.n_shared["overall"], a.outlier
    (-1.0, 3, False)
    """
    columns = {d: scores[:, j] for j, d in enumerate(dimensions)}
    columns["overall"] = overall
    columns, others, codes, items, bounds = _in_annotator_order(
        item_index, annotator_index, columns, n_items, len(annotator_names)
    )
    rows = []
    for a, name in enumerate(annotator_names):
        mine = slice(bounds[a], bounds[a + 1])
        n = int(np.count_nonzero(np.bincount(items[mine])))
        rows.append((name, n, *_annotator_stats(columns, others, codes, mine)))
    return _with_outliers(rows)


def _in_annotator_order(item_index, annotator_index, columns, n_items: int, n_annotators: int):
    """(columns, the others' mean of each, their value codes, item rows, each annotator's bounds), every
    array put in annotator order once (stable: each annotator's rows keep their order), so each
    annotator's rows are one slice ``bounds[a]:bounds[a + 1]``."""
    others = {d: _others_mean(item_index, v, n_items) for d, v in columns.items()}
    # Value codes computed once over everyone; each annotator's ranks are then a bincount.
    codes = {d: (_codes(v), _codes(others[d])) for d, v in columns.items()}
    order = np.argsort(annotator_index, kind="stable")
    bounds = np.searchsorted(np.asarray(annotator_index)[order], np.arange(n_annotators + 1))
    columns = {d: v[order] for d, v in columns.items()}
    others = {d: v[order] for d, v in others.items()}
    codes = {d: ((cx[order], nx), (cy[order], ny)) for d, ((cx, nx), (cy, ny)) in codes.items()}
    return columns, others, codes, np.asarray(item_index)[order], bounds


def _annotator_stats(columns, others, codes, mine: slice) -> tuple[dict, dict, dict, dict]:
    """(mean, bias, leave-one-out ρ, shared items) per column of the annotator whose rows are ``mine``."""
    mean, bias, rho, n_shared = {}, {}, {}, {}
    for d, v in columns.items():
        own = v[mine]
        ref = others[d][mine]
        shared = np.isfinite(own) & np.isfinite(ref)
        mean[d] = finite_or_none(np.nanmean(own)) if np.isfinite(own).any() else None
        bias[d] = finite_or_none((own[shared] - ref[shared]).mean()) if shared.any() else None
        (cx, nx), (cy, ny) = codes[d]
        rho[d] = _spearman_coded(cx[mine][shared], nx, cy[mine][shared], ny)
        n_shared[d] = int(shared.sum())  # one annotation per item and annotator: items, and ρ's pairs
    return mean, bias, rho, n_shared


def _with_outliers(rows: list[tuple]) -> list[AnnotatorQuality]:
    """Each annotator's row (name, items, mean, bias, ρ, shared items) with its outlier flag: robust
    z-scores over the annotators with at least ``MIN_SHARED_ITEMS`` shared items."""
    enough = [r[5]["overall"] >= MIN_SHARED_ITEMS for r in rows]
    z_bias = _robust_z([r[3]["overall"] if ok else None for r, ok in zip(rows, enough)])
    z_rho = _robust_z([r[4]["overall"] if ok else None for r, ok in zip(rows, enough)])
    out = []
    for (name, n, mean, bias, rho, n_shared), ok, zb, zr in zip(rows, enough, z_bias, z_rho):
        reasons = _outlier_reasons(bias["overall"], ok, zb, zr)
        out.append(
            AnnotatorQuality(
                annotator=name,
                n_items=n,
                mean=mean,
                bias=bias,
                spearman_loo=rho,
                outlier=bool(reasons),
                reasons=tuple(reasons),
                n_shared=n_shared,
            )
        )
    return out


def _outlier_reasons(b: float | None, ok: bool, zb: float | None, zr: float | None) -> list[str]:
    """Why an annotator is an outlier (none: not one): overall bias ``b``, its robust z ``zb``, and the
    robust z of their ρ ``zr``; ``ok``: enough shared items to flag anyone on bias."""
    reasons = []
    if not ok:
        pass  # too few shared items: bias and ρ are shown with their n, and flag no one
    elif b is not None and abs(b) >= BIAS_POINTS:
        reasons.append(f"overall score {b:+.2f} points from the others on the same items")
    elif zb is not None and abs(zb) > ROBUST_Z:
        reasons.append(f"bias far from the other annotators' (robust z {zb:+.1f})")
    if zr is not None and zr < -ROBUST_Z:
        reasons.append(f"agrees with the others far less than the rest (robust z {zr:+.1f})")
    return reasons


# ------------------------------------------------------------------ disagreement
@dataclass(frozen=True)
class Disagreement:
    item: int  # row index into the item arrays
    dimension: str
    spread: int  # highest minus lowest score
    sd: float
    distribution: tuple[int, ...]  # ratings per category


def widest_spread(
    counts: IntArray, item_rows: IntArray, categories: Sequence[int], dimension: str, *, limit: int = 10
) -> list[Disagreement]:
    """The items with the widest score range on one dimension (ties: larger SD first).

    Parameters
    ----------
    counts : numpy.ndarray, shape (items, categories)
        Ratings of this dimension.
    item_rows : numpy.ndarray of int
        The item index of each row of ``counts``.
    categories : sequence of int
    dimension : str
    limit : int
        How many to list.

    Returns
    -------
    list of Disagreement
        Items with a spread of 0 are never listed.
    """
    table = np.asarray(counts, dtype=float)
    if len(table) == 0:
        return []
    cats = np.asarray(categories, dtype=float)
    present = table > 0
    lo = cats[np.argmax(present, axis=1)]
    hi = cats[len(cats) - 1 - np.argmax(present[:, ::-1], axis=1)]
    spread = hi - lo
    n = table.sum(axis=1)
    mean = table @ cats / n
    with np.errstate(divide="ignore", invalid="ignore"):
        sd = np.sqrt((table * (cats[None, :] - mean[:, None]) ** 2).sum(axis=1) / (n - 1))
    sd = np.nan_to_num(sd)
    order = np.lexsort((np.asarray(item_rows), -sd, -spread))
    order = order[spread[order] > 0][:limit]
    return [
        Disagreement(
            item=int(item_rows[i]),
            dimension=dimension,
            spread=int(spread[i]),
            sd=float(sd[i]),
            distribution=tuple(int(x) for x in counts[i]),
        )
        for i in order
    ]
