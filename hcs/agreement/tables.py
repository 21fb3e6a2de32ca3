"""From ratings to the tables the coefficients read: items × categories counts, the weight matrix of
a scale, and counts back to ratings. Shared by every coefficient in :mod:`hcs.agreement.coefficients`.

>>> counts_from_ratings([[1, 1, 2], [3, 3, 3]], categories=[1, 2, 3]).tolist()
[[2, 1, 0], [0, 0, 3]]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

Counts = npt.NDArray[np.int64]


class AgreementError(ValueError):
    """The ratings cannot give the asked-for coefficient."""


def counts_from_ratings(ratings: npt.ArrayLike, categories: Sequence[float]) -> Counts:
    """Items × raters ratings (NaN = not rated) → items × categories counts.

    Like ``statsmodels.stats.inter_rater.aggregate_raters`` but with the category
    columns fixed (unused levels stay as zero columns) and missing ratings allowed.

    Parameters
    ----------
    ratings : array_like, shape (items, raters)
        Scores, NaN where a rater did not rate an item.
    categories : sequence of float
        Every possible score, in order.

    Returns
    -------
    numpy.ndarray of int, shape (items, categories)

    Raises
    ------
    AgreementError
        When ``ratings`` is not 2-D or holds a value outside ``categories``.

    References
    ----------
    Fleiss, J. L. (1971). Measuring nominal scale agreement among many raters. *Psychological
    Bulletin* 76(5), 378–382 (the items × categories layout).

    Examples
    --------

    >>> counts_from_ratings([[1, 1, 2], [3, float("nan"), 3]], categories=[1, 2, 3])
    array([[2, 1, 0],
           [0, 0, 2]])
    """
    data = np.asarray(ratings, dtype=float)
    if data.ndim != 2:
        raise AgreementError("ratings must be a 2-D items × raters array")
    cats = np.asarray(categories, dtype=float)
    rated = ~np.isnan(data)
    known = np.isin(data[rated], cats)
    if not known.all():
        bad = data[rated][~known][0]
        raise AgreementError(f"rating {bad:g} is not one of the categories {list(categories)}")
    return (data[:, :, None] == cats[None, None, :]).sum(axis=1).astype(np.int64)


def weight_matrix(categories: Sequence[float], weights: str = "ordinal") -> npt.NDArray[np.float64]:
    """Agreement weights between categories: Gwet's (``irrCAC.weights.Weights``) or ``within_one``.

    Parameters
    ----------
    categories : sequence of float
        The scale, in order.
    weights : str
        An ``irrCAC`` weight name (``"identity"``, ``"ordinal"``, ``"linear"``, ``"quadratic"``, …) or
        ``"within_one"``: credit 1 to scores at most one level apart, 0 otherwise.

    Returns
    -------
    numpy.ndarray, shape (categories, categories)

    References
    ----------
    Gwet, K. L. (2014). *Handbook of Inter-Rater Reliability*, 4th ed., Advanced Analytics, ch. 3.
    """
    if weights == "within_one":
        idx = np.arange(len(categories))
        return (np.abs(idx[:, None] - idx[None, :]) <= 1).astype(float)
    from irrCAC.weights import Weights

    return np.asarray(Weights(list(categories))[weights], dtype=float)


def ratings_from_counts(counts: npt.ArrayLike, categories: Sequence[float]) -> npt.NDArray[np.float64]:
    """Counts back to an items × max-ratings array (NaN padded); rater order is arbitrary.

    Parameters
    ----------
    counts : array_like, shape (items, categories)
    categories : sequence of float

    Returns
    -------
    numpy.ndarray, shape (items, max ratings per item)

    Examples
    --------

    >>> ratings_from_counts([[2, 1, 0], [0, 0, 1]], [1, 2, 3])
    array([[ 1.,  1.,  2.],
           [ 3., nan, nan]])
    """
    table = np.asarray(counts, dtype=np.int64)
    per_item = table.sum(axis=1)
    width = int(per_item.max()) if len(per_item) else 0
    values = np.repeat(np.tile(np.asarray(categories, dtype=float), len(table)), table.ravel())
    rows = np.repeat(np.arange(len(table)), per_item)
    starts = np.concatenate(([0], np.cumsum(per_item)[:-1]))
    cols = np.arange(len(values)) - np.repeat(starts, per_item)
    out = np.full((len(table), width), np.nan)
    out[rows, cols] = values
    return out
