"""One judge on one dimension against the people who rated the same items.

Inputs are plain mappings so a notebook can feed an exported CSV:
``human = {item: {annotator: score}}`` (whole numbers on the rubric's scale) and
``judge = {item: score}`` (already mapped onto that scale; may be fractional).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field

import numpy as np

from hcs.agreement.bootstrap import percentile_interval
from hcs.calibration.alt_test import DEFAULT_EPSILON, AltTestResult, alt_test
from hcs.numbers import finite_or_none

SCALE = (1, 5)
N_BOOT = 1000


def round_half_up(values) -> np.ndarray:
    """Round to whole numbers with .5 going up (numpy's default rounds .5 to even)."""
    return np.floor(np.asarray(values, dtype=float) + 0.5)


def _corr(kind: str, x: np.ndarray, y: np.ndarray) -> float:
    # imported on first use: the web app's rating workers never need scipy
    from scipy import stats

    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    if kind == "spearman":
        return float(stats.spearmanr(x, y).statistic)
    if kind == "kendall":
        return float(stats.kendalltau(x, y).statistic)  # τ-b, tie-corrected
    return float(stats.pearsonr(x, y).statistic)


MAX_TABLE_CELLS = 2500  # Kendall via contingency tables when x and y take at most this many value pairs


def _row_ranks(a: np.ndarray) -> np.ndarray:
    """Average ranks (ties share the mean rank) within each row of a 2-D array, without a Python loop.

    Rows are shifted apart by more than their range so one sort and two searches rank every row.
    """
    b, n = a.shape
    span = float(np.ptp(a)) + 1.0 if a.size else 1.0
    shifted = a + (np.arange(b) * span)[:, None]
    flat = np.sort(shifted, axis=None)
    start = (np.arange(b) * n)[:, None]
    left = np.searchsorted(flat, shifted, side="left") - start
    right = np.searchsorted(flat, shifted, side="right") - start
    return (left + 1 + right) / 2.0


def _resample_ranks(values: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Average ranks of ``values[idx]`` within each resample (row of ``idx``).

    From per-resample counts of each distinct value: a value's average rank is the count of smaller
    values plus (its own count + 1) / 2. Falls back to sorting when the count table would be large.
    """
    distinct, codes = np.unique(values, return_inverse=True)
    n_boot = idx.shape[0]
    if n_boot * len(distinct) > 5_000_000:
        return _row_ranks(values[idx])
    coded = codes[idx]
    counts = np.bincount(
        (coded + (np.arange(n_boot) * len(distinct))[:, None]).ravel(), minlength=n_boot * len(distinct)
    ).reshape(n_boot, len(distinct))
    below = np.cumsum(counts, axis=1) - counts
    rank_of_code = below + (counts + 1) / 2.0
    return np.take_along_axis(rank_of_code, coded, axis=1)


def _pearson_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a - a.mean(axis=1, keepdims=True)
    b = b - b.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (a * b).sum(axis=1) / np.sqrt((a**2).sum(axis=1) * (b**2).sum(axis=1))


def _kendall_resamples(x: np.ndarray, y: np.ndarray, idx: np.ndarray) -> np.ndarray | None:
    """Kendall's τ-b of every resample ``idx`` (B × n) from its contingency table of (x, y) values.

    C − D = Σ T_ij (T below-right − T below-left); ties from the margins. ``None`` when x and y take
    too many distinct value pairs for tables (the caller then loops over scipy).
    """
    xv, xc = np.unique(x, return_inverse=True)
    yv, yc = np.unique(y, return_inverse=True)
    dx, dy = len(xv), len(yv)
    if dx * dy > MAX_TABLE_CELLS:
        return None
    n_boot, n = idx.shape
    cells = (xc * dy + yc)[idx] + (np.arange(n_boot) * dx * dy)[:, None]
    t = np.bincount(cells.ravel(), minlength=n_boot * dx * dy).reshape(n_boot, dx, dy).astype(float)
    # below_right[i, j] = Σ_{i' > i, j' > j} T;  below_left[i, j] = Σ_{i' > i, j' < j} T
    ge_ge = t[:, ::-1, ::-1].cumsum(axis=1).cumsum(axis=2)[:, ::-1, ::-1]
    below_right = np.zeros_like(t)
    below_right[:, :-1, :-1] = ge_ge[:, 1:, 1:]
    ge_le = t[:, ::-1, :].cumsum(axis=1)[:, ::-1, :].cumsum(axis=2)
    below_left = np.zeros_like(t)
    below_left[:, :-1, 1:] = ge_le[:, 1:, :-1]
    s = (t * (below_right - below_left)).sum(axis=(1, 2))
    n0 = n * (n - 1) / 2.0
    rows, cols = t.sum(axis=2), t.sum(axis=1)
    n1 = (rows * (rows - 1) / 2.0).sum(axis=1)
    n2 = (cols * (cols - 1) / 2.0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return s / np.sqrt((n0 - n1) * (n0 - n2))


def bootstrap_ci(
    x,
    y,
    statistic: str | Callable[[np.ndarray, np.ndarray], float],
    *,
    n_boot: int = N_BOOT,
    seed: int = 0,
    level: float = 0.95,
    scale: tuple[int, int] = SCALE,
) -> tuple[float, float]:
    """Percentile bootstrap CI of ``statistic(x, y)``, resampling items (pairs) with replacement.

    Parameters
    ----------
    x, y : array_like
        Paired values, one pair per item.
    statistic : {"spearman", "kendall", "qwk"} or callable
        Spearman's ρ, Kendall's τ-b or the quadratic-weighted κ of whole-number categories on ``scale``
        (each computed for all resamples at once), or any function of two arrays.
    n_boot, seed : int
        Resamples and the seed of ``numpy.random.default_rng``.
    level : float
        Coverage of the interval.

    Returns
    -------
    tuple of float
        The interval by the one percentile rule of :func:`hcs.agreement.bootstrap.percentile_interval`
        (undefined resamples dropped; no interval when more than half are undefined), here
        ``(nan, nan)`` when there is none or fewer than three pairs.

    References
    ----------
    Efron, B. and Tibshirani, R. J. (1993). *An Introduction to the Bootstrap*. Chapman & Hall, ch. 13.
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) < 3:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(x), size=(n_boot, len(x)))
    values = None
    if statistic == "spearman":
        values = _pearson_rows(_resample_ranks(x, idx), _resample_ranks(y, idx))
    elif statistic == "qwk":
        values = qwk_resamples(x, y, idx, scale)
    elif statistic == "kendall":
        values = _kendall_resamples(x, y, idx)
        if values is None:
            values = np.array([_corr("kendall", x[i], y[i]) for i in idx])
    else:
        values = np.array([statistic(x[i], y[i]) for i in idx])
    interval = percentile_interval(values, level)
    return interval if interval is not None else (math.nan, math.nan)


def confusion_matrix(human, judge, scale: tuple[int, int] = SCALE) -> list[list[int]]:
    """Counts with rows = human category, columns = judge category (both whole numbers on ``scale``).

    Parameters
    ----------
    human, judge : array_like of int
    scale : tuple of int

    Returns
    -------
    list of list of int

    Raises
    ------
    ValueError
        When a category lies outside ``scale``.
    """
    lo, hi = scale
    size = hi - lo + 1
    matrix = np.zeros((size, size), dtype=int)
    for h, j in zip(np.asarray(human, dtype=int), np.asarray(judge, dtype=int)):
        if not (lo <= h <= hi and lo <= j <= hi):
            raise ValueError(f"category {h if not lo <= h <= hi else j} is outside {lo}–{hi}")
        matrix[h - lo, j - lo] += 1
    return matrix.tolist()


def kappa_of_table(table: np.ndarray, *, weights: str | None = None) -> float:
    """Cohen's κ of a square contingency table, as ``statsmodels.stats.inter_rater.cohens_kappa`` gives it.

    Parameters
    ----------
    table : array_like, shape (K, K)
        Counts, rows = one rater's category, columns = the other's.
    weights : {None, "linear", "quadratic"}
        None for Cohen's κ, ``"quadratic"`` for the quadratic-weighted κ.

    Returns
    -------
    float
        κ; NaN when undefined (no ratings, or chance agreement of 1).

    References
    ----------
    Cohen, J. (1960). A coefficient of agreement for nominal scales. *Educational and Psychological
    Measurement* 20(1), 37–46. Cohen, J. (1968). Weighted kappa. *Psychological Bulletin* 70(4), 213–220.
    """
    table = np.asarray(table, dtype=float)
    if table.sum() == 0:
        return math.nan
    # statsmodels' formula, written out: importing statsmodels costs more than a report's κs.
    k = table.shape[0]
    i, j = np.indices((k, k))
    if weights is None:
        disagree = (i != j).astype(float)
    elif weights == "linear":
        disagree = np.abs(i - j).astype(float)
    elif weights == "quadratic":
        disagree = ((i - j) ** 2).astype(float)
    else:
        raise ValueError(f"weights must be None, 'linear' or 'quadratic', not {weights!r}")
    p = table / table.sum()
    expected = np.outer(p.sum(axis=1), p.sum(axis=0))
    with np.errstate(divide="ignore", invalid="ignore"):
        value = float(1 - (disagree * p).sum() / (disagree * expected).sum())
    return value if math.isfinite(value) else math.nan


def quadratic_weighted_kappa(human, judge, scale: tuple[int, int] = SCALE) -> float:
    """Cohen's κ with quadratic weights ``(i − j)² / (K − 1)²`` over the categories of ``scale``.

    Parameters
    ----------
    human, judge : array_like of int
        Paired whole-number categories on ``scale``.
    scale : tuple of int
        Lowest and highest category.

    Returns
    -------
    float
        NaN when undefined.

    References
    ----------
    Cohen, J. (1968). Weighted kappa. *Psychological Bulletin* 70(4), 213–220.
    """
    return kappa_of_table(np.asarray(confusion_matrix(human, judge, scale), dtype=float), weights="quadratic")


def qwk_resamples(human, judge, idx: np.ndarray, scale: tuple[int, int] = SCALE) -> np.ndarray:
    """:func:`quadratic_weighted_kappa` of ``human[i], judge[i]`` for each row ``i`` of ``idx`` at once:
    one confusion table per row, then :func:`kappa_of_table`'s formula over the stack (NaN where
    undefined). Categories outside ``scale`` raise ``ValueError``, as ``confusion_matrix`` does.

    >>> h, j = np.array([1, 2, 3, 3]), np.array([1, 2, 3, 2])
    >>> idx = np.array([[0, 1, 2, 3], [0, 0, 0, 0]])
    >>> qwk_resamples(h, j, idx, (1, 3)).round(4).tolist(), round(quadratic_weighted_kappa(h, j, (1, 3)), 4)
    ([0.8, nan], 0.8)
    """
    lo, hi = scale
    size = hi - lo + 1
    human, judge = np.asarray(human, dtype=int), np.asarray(judge, dtype=int)
    outside = (human < lo) | (human > hi) | (judge < lo) | (judge > hi)
    if outside.any():
        raise ValueError(f"a category is outside {lo}–{hi}")
    cells = (human - lo) * size + (judge - lo)
    n = len(idx)
    flat = cells[idx] + (np.arange(n) * size * size)[:, None]
    tables = np.bincount(flat.ravel(), minlength=n * size * size).reshape(n, size, size).astype(float)
    i, j = np.indices((size, size))
    disagree = ((i - j) ** 2).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = tables / tables.sum(axis=(1, 2))[:, None, None]
        expected = p.sum(axis=2)[:, :, None] * p.sum(axis=1)[:, None, :]
        values = 1 - (disagree * p).sum(axis=(1, 2)) / (disagree * expected).sum(axis=(1, 2))
    return np.where(np.isfinite(values), values, np.nan)


def human_ceiling(
    human: Mapping[Hashable, Mapping[Hashable, float]], kind: str = "spearman", *, min_items: int = 3
) -> float:
    """How well people agree with each other, on the judge's yardstick.

    For each annotator, the correlation of their scores with the mean of the *other* annotators on the
    items they rated (items with at least one other rating); the result is the mean over annotators
    with at least ``min_items`` such items and a defined correlation.

    Parameters
    ----------
    human : mapping
        ``{item: {annotator: score}}``.
    kind : {"spearman", "kendall", "pearson"}
    min_items : int

    Returns
    -------
    float
        NaN when no annotator qualifies.

    References
    ----------
    Spearman, C. (1904). The proof and measurement of association between two things. *American
    Journal of Psychology* 15(1), 72–101. Kendall, M. G. (1945). The treatment of ties in ranking
    problems. *Biometrika* 33(3), 239–251 (τ-b).
    """
    per_annotator: dict[Hashable, tuple[list[float], list[float]]] = {}
    for ratings in human.values():
        if len(ratings) < 2:
            continue
        total = sum(ratings.values())
        for annotator, score in ratings.items():
            mine, others = per_annotator.setdefault(annotator, ([], []))
            mine.append(score)
            others.append((total - score) / (len(ratings) - 1))
    values = [
        _corr(kind, np.asarray(mine, dtype=float), np.asarray(others, dtype=float))
        for mine, others in per_annotator.values()
        if len(mine) >= min_items
    ]
    values = [v for v in values if math.isfinite(v)]
    return float(np.mean(values)) if values else math.nan


def _alpha(rows: list[list[float]]) -> float:
    import krippendorff

    data = np.asarray(rows, dtype=float)
    if data.shape[0] < 2 or np.sum(np.sum(np.isfinite(data), axis=0) >= 2) == 0:
        return math.nan
    values = data[np.isfinite(data)]
    if np.ptp(values) == 0:
        return math.nan
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement="interval"))


def alpha_with_and_without_judge(
    human: Mapping[Hashable, Mapping[Hashable, float]], judge: Mapping[Hashable, float]
) -> tuple[float, float]:
    """Krippendorff's α (interval) of the annotators alone, and with the judge as one more rater.

    Both over the items the judge scored, so the two numbers differ only by the judge.

    Parameters
    ----------
    human : mapping
        ``{item: {annotator: score}}``.
    judge : mapping
        ``{item: score}`` on the same scale.

    Returns
    -------
    tuple of float
        (α without the judge, α with the judge); NaN where undefined.

    References
    ----------
    Krippendorff, K. (2011). Computing Krippendorff's alpha-reliability. University of Pennsylvania.
    """
    items = [i for i in human if i in judge]
    annotators = sorted({a for i in items for a in human[i]}, key=str)
    rows = [[float(human[i].get(a, math.nan)) for i in items] for a in annotators]
    humans_only = _alpha(rows)
    with_judge = _alpha([*rows, [float(judge[i]) for i in items]])
    return humans_only, with_judge


@dataclass(frozen=True)
class JudgeCalibration:
    n: int
    spearman: float | None
    spearman_ci95: tuple[float | None, float | None]
    kendall: float | None
    kendall_ci95: tuple[float | None, float | None]
    pearson: float | None
    mae: float | None
    bias: float | None  # mean(judge − human mean): positive when the judge is more generous
    qwk: float | None
    confusion: list[list[int]]  # rows: rounded human median; columns: rounded judge score
    human_ceiling_spearman: float | None
    human_ceiling_kendall: float | None
    alpha_humans: float | None
    alpha_with_judge: float | None
    alt_test: AltTestResult
    pairs: tuple[tuple[float, float], ...] = field(default=(), repr=False)  # (human mean, judge) per item

    @property
    def possibly_inverted(self) -> bool:
        """A negative correlation with people whose 95% CI excludes 0: the judge's scale may be declared the
        wrong way round. A negative point estimate alone is not enough: a random judge gives one half the
        time on a dozen items."""
        high = self.spearman_ci95[1]
        return self.spearman is not None and self.spearman < 0 and high is not None and high < 0


def calibrate_judge(
    human: Mapping[Hashable, Mapping[Hashable, float]],
    judge: Mapping[Hashable, float],
    *,
    epsilon: float = DEFAULT_EPSILON,
    n_boot: int = N_BOOT,
    seed: int = 0,
    scale: tuple[int, int] = SCALE,
) -> JudgeCalibration:
    """Everything the report shows for one judge × dimension, over the items both people and judge scored.

    Parameters
    ----------
    human : mapping
        ``{item: {annotator: score}}`` on the rubric scale.
    judge : mapping
        ``{item: score}``, already mapped onto the rubric scale.
    epsilon : float
        The alt-test's margin ε.
    n_boot, seed : int
        Bootstrap resamples for the correlation intervals, and their seed.
    scale : tuple of int
        The rubric scale, for the confusion matrix and the quadratic-weighted κ.

    Returns
    -------
    JudgeCalibration
        Spearman's ρ and Kendall's τ-b with bootstrap CIs, Pearson's r, MAE and bias, QWK of the
        rounded judge against the rounded human median, the human ceiling, α with and without the
        judge, the alt-test, a possibly-inverted flag and the confusion matrix; undefined → None.

    References
    ----------
    Calderon, Reichart and Dror (2025) for the alt-test; Cohen (1968) for QWK; Krippendorff (2011)
    for α; Efron and Tibshirani (1993) for the bootstrap.
    """
    items = [i for i in human if i in judge and judge[i] is not None and len(human[i]) > 0]
    human_mean = np.array([statistics.fmean(human[i].values()) for i in items], dtype=float)
    human_median = np.array([statistics.median(human[i].values()) for i in items], dtype=float)
    judge_values = np.array([float(judge[i]) for i in items], dtype=float)
    n = len(items)
    lo, hi = scale
    judge_cat = np.clip(round_half_up(judge_values), lo, hi).astype(int)
    human_cat = np.clip(round_half_up(human_median), lo, hi).astype(int)
    errors = judge_values - human_mean
    alphas = alpha_with_and_without_judge({i: human[i] for i in items}, {i: judge[i] for i in items})

    def pair(ci):
        return (finite_or_none(ci[0]), finite_or_none(ci[1]))

    return JudgeCalibration(
        n=n,
        spearman=finite_or_none(_corr("spearman", judge_values, human_mean)),
        spearman_ci95=pair(bootstrap_ci(judge_values, human_mean, "spearman", n_boot=n_boot, seed=seed)),
        kendall=finite_or_none(_corr("kendall", judge_values, human_mean)),
        kendall_ci95=pair(bootstrap_ci(judge_values, human_mean, "kendall", n_boot=n_boot, seed=seed)),
        pearson=finite_or_none(_corr("pearson", judge_values, human_mean)),
        mae=finite_or_none(float(np.mean(np.abs(errors)))) if n else None,
        bias=finite_or_none(float(np.mean(errors))) if n else None,
        qwk=finite_or_none(quadratic_weighted_kappa(human_cat, judge_cat, scale)) if n else None,
        confusion=confusion_matrix(human_cat, judge_cat, scale),
        human_ceiling_spearman=finite_or_none(human_ceiling({i: human[i] for i in items}, "spearman")),
        human_ceiling_kendall=finite_or_none(human_ceiling({i: human[i] for i in items}, "kendall")),
        alpha_humans=finite_or_none(alphas[0]),
        alpha_with_judge=finite_or_none(alphas[1]),
        alt_test=alt_test({i: human[i] for i in items}, {i: judge[i] for i in items}, epsilon=epsilon),
        pairs=tuple(zip(human_mean.tolist(), judge_values.tolist())),
    )
