"""Agreement coefficients computed from an items × categories count matrix.

Every function here takes ``counts``: row *i* holds how many raters put item *i*
into each category (columns ordered like ``categories``). Raters' identities do
not enter Fleiss' κ, Krippendorff's α or Gwet's AC2, so the count matrix — what
one grouped SQL query returns — is all they need.

Point estimates call the field's libraries: ``statsmodels`` for Fleiss' κ,
``krippendorff`` for α and ``irrCAC`` for Gwet's AC2. The ``*_batched`` functions
evaluate the same formulas for many reweightings of the items at once (one row
of ``weights`` per bootstrap resample); with a single row of ones they equal the
library values, which the tests check.

Fleiss (1971) diagnoses table, as in R ``irr::kappam.fleiss(diagnoses)``:

>>> import numpy as np
>>> from hcs.agreement.examples import FLEISS_1971_DIAGNOSES
>>> counts = counts_from_ratings(FLEISS_1971_DIAGNOSES, categories=[1, 2, 3, 4, 5])
>>> round(fleiss_kappa(counts), 7)
0.4302445

Krippendorff (2011) "Computing Krippendorff's Alpha-Reliability", the 4 observers
× 12 units example with missing values:

>>> from hcs.agreement.examples import KRIPPENDORFF_2011_RELIABILITY
>>> counts = counts_from_ratings(KRIPPENDORFF_2011_RELIABILITY.T, categories=[1, 2, 3, 4, 5])
>>> round(krippendorff_alpha(counts, [1, 2, 3, 4, 5], "nominal"), 3)
0.743
>>> round(krippendorff_alpha(counts, [1, 2, 3, 4, 5], "ordinal"), 3)
0.815
>>> round(krippendorff_alpha(counts, [1, 2, 3, 4, 5], "interval"), 3)
0.849

Gwet (2014) *Handbook of Inter-Rater Reliability*, 4th ed., the same 12 units
(irrCAC's ``raw_4raters``): unweighted AC1 0.775 with pa 0.818 and pe 0.190;
ordinal weights AC2 0.899 with pa 0.968 and pe 0.685:

>>> round(gwet_ac2(counts, [1, 2, 3, 4, 5], weights="identity"), 3)
0.775
>>> round(gwet_ac2(counts, [1, 2, 3, 4, 5]), 3)
0.899
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from hcs.agreement.tables import (  # noqa: F401  (re-exported: the coefficients' inputs and errors)
    AgreementError,
    Counts,
    counts_from_ratings,
    ratings_from_counts,
    weight_matrix,
)

if TYPE_CHECKING:
    from hcs.agreement.bootstrap import Resamples


# ---------------------------------------------------------------- library calls
def fleiss_kappa(counts: npt.ArrayLike) -> float:
    """Fleiss' κ by ``statsmodels.stats.inter_rater.fleiss_kappa``.

    Parameters
    ----------
    counts : array_like, shape (items, categories)
        How many raters gave each category to each item; every row must sum to the same n ≥ 2.

    Returns
    -------
    float
        κ; NaN when chance agreement is 1 (every rating in one category).

    Raises
    ------
    AgreementError
        For no items, unequal row sums or fewer than two ratings per item.

    References
    ----------
    Fleiss, J. L. (1971). Measuring nominal scale agreement among many raters. *Psychological
    Bulletin* 76(5), 378–382. Its 30 patients × 6 psychiatrists give κ = 0.4302445
    (``hcs.agreement.examples.FLEISS_1971_DIAGNOSES``).
    """
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

    table = np.asarray(counts)
    if table.ndim != 2 or table.shape[0] == 0:
        raise AgreementError("Fleiss' κ needs at least one item")
    per_item = table.sum(axis=1)
    if (per_item != per_item[0]).any():
        raise AgreementError("Fleiss' κ needs the same number of ratings on every item")
    if per_item[0] < 2:
        raise AgreementError("Fleiss' κ needs at least two ratings per item")
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(sm_fleiss_kappa(table, method="fleiss"))


def krippendorff_alpha(counts: npt.ArrayLike, categories: Sequence[float], level: str) -> float:
    """Krippendorff's α by the ``krippendorff`` package, from value counts.

    Parameters
    ----------
    counts : array_like, shape (items, categories)
        Ratings per item and category; items may have different numbers of ratings. Items with
        fewer than two are unpairable and ignored.
    categories : sequence of float
        The values of the categories (they set the distances for ``"interval"``).
    level : {"nominal", "ordinal", "interval", "ratio"}
        Level of measurement.

    Returns
    -------
    float
        α; NaN when there is no variation to measure (all pairable values equal).

    Raises
    ------
    AgreementError
        When no item was rated twice.

    References
    ----------
    Krippendorff, K. (2011). Computing Krippendorff's alpha-reliability. Annenberg School for
    Communication, University of Pennsylvania. Its 4 observers × 12 units give α = 0.815 (ordinal)
    and 0.849 (interval) (``hcs.agreement.examples.KRIPPENDORFF_2011_RELIABILITY``).
    """
    import krippendorff

    table = np.asarray(counts)
    if table.ndim != 2 or not (table.sum(axis=1) >= 2).any():
        raise AgreementError("Krippendorff's α needs an item rated at least twice")
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(
            krippendorff.alpha(
                value_counts=table,
                value_domain=np.asarray(categories, dtype=float),
                level_of_measurement=level,
            )
        )


def gwet_ac2(counts: npt.ArrayLike, categories: Sequence[float], weights: str = "ordinal") -> float:
    """Gwet's AC2 (AC1 with ``weights="identity"``) by ``irrCAC``, over the full category set.

    Parameters
    ----------
    counts : array_like, shape (items, categories)
        Ratings per item and category; unequal numbers of ratings per item are fine.
    categories : sequence of float
        Every category, used or not (chance agreement depends on the full scale).
    weights : str
        ``irrCAC`` weights; ``"ordinal"`` for the rubric's scores.

    Returns
    -------
    float
        The chance-corrected agreement, computed on every category of the scale.

    Raises
    ------
    AgreementError
        When no item has two ratings or more.

    References
    ----------
    Gwet, K. L. (2008). Computing inter-rater reliability and its variance in the presence of high
    agreement. *British Journal of Mathematical and Statistical Psychology* 61(1), 29–48.
    Gwet, K. L. (2014). *Handbook of Inter-Rater Reliability*, 4th ed.: AC2 = 0.899 with ordinal
    weights on Krippendorff's (2011) example.
    """
    import pandas as pd
    from irrCAC.raw import CAC

    table = np.asarray(counts)
    if table.ndim != 2 or not (table.sum(axis=1) >= 2).any():
        raise AgreementError("Gwet's AC2 needs an item rated at least twice")
    rated = table[table.sum(axis=1) > 0]
    if len(rated) < 2:
        # irrCAC divides by n − 1 for its variance and fails on one item; same formula here.
        w = weight_matrix(categories, weights)
        return float(_gwet_batched(np.ones((1, 1)), _gwet_features(rated, w), w)[0])
    ratings = pd.DataFrame(ratings_from_counts(rated, categories))
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cac = CAC(ratings, weights=weights, categories=list(categories), digits=15)
        return float(cac.gwet()["est"]["coefficient_value"])


def brennan_prediger(counts: npt.ArrayLike, categories: Sequence[float]) -> float:
    """Brennan and Prediger's κ (Randolph's free-marginal κ): nominal agreement corrected for a chance
    agreement of 1/q on a q-point scale.

    Computed here in closed form, the formula of ``irrCAC``'s ``CAC.bp()`` (identity weights), which
    takes seconds on 200,000 items; the tests check it against ``bp()`` and against
    ``statsmodels.stats.inter_rater.fleiss_kappa(..., method="randolph")``.

    Parameters
    ----------
    counts : array_like, shape (items, categories)
        Ratings per item and category; unequal numbers of ratings per item are fine.
    categories : sequence of float
        Every category, used or not (q counts them all).

    Returns
    -------
    float
        (pa − 1/q) / (1 − 1/q), pa the observed agreement over the items rated at least twice.

    Raises
    ------
    AgreementError
        When no item has two ratings or more.

    References
    ----------
    Brennan, R. L. and Prediger, D. J. (1981). Coefficient kappa: some uses, misuses, and
    alternatives. *Educational and Psychological Measurement* 41(3), 687–699. Randolph, J. J. (2005).
    Free-marginal multirater kappa. On Krippendorff's (2011) example it is 0.773, as ``bp()`` gives.

    Examples
    --------
    >>> round(brennan_prediger([[3, 0, 0], [1, 1, 0]], [1, 2, 3]), 4)
    0.25
    """
    table = np.asarray(counts)
    if table.ndim != 2 or not (table.sum(axis=1) >= 2).any():
        raise AgreementError("Brennan and Prediger's κ needs an item rated at least twice")
    features = _gwet_features(table, np.eye(len(categories)))
    return float(_bp_batched(np.ones((1, len(table))), features)[0])


def percent_agreement(counts: npt.ArrayLike, within: int = 0) -> float:
    """Pairwise percent agreement (0–100) over items rated at least twice.

    For each item, the share of ordered rater pairs whose scores differ by at
    most ``within`` levels; then the mean over items (Fleiss' P̄ when ``within=0``).

    Parameters
    ----------
    counts : array_like, shape (items, categories)
    within : int
        Largest difference, in levels, that still counts as agreeing.

    Returns
    -------
    float

    References
    ----------
    Fleiss, J. L. (1971), as for :func:`fleiss_kappa` (P̄, the observed agreement).

    Examples
    --------

    >>> percent_agreement([[3, 0, 0], [1, 1, 0]])
    50.0
    >>> percent_agreement([[3, 0, 0], [1, 1, 0]], within=1)
    100.0
    """
    table = np.asarray(counts, dtype=float)
    idx = np.arange(table.shape[1])
    w = (np.abs(idx[:, None] - idx[None, :]) <= within).astype(float)
    features = _gwet_features(table, w)
    if features[:, 1].sum() == 0:
        raise AgreementError("percent agreement needs an item rated at least twice")
    return float(100.0 * features[:, 0].sum() / features[:, 1].sum())


# ---------------------------------------------------------------- batched formulas
# Each statistic is a function of sums over items of per-item features; a
# resample is a vector of item multiplicities, so resampling is a matrix product.


def _fleiss_features(table: npt.NDArray) -> npt.NDArray[np.float64]:
    """Columns: Σ_j n_ij², then n_i1 … n_iq."""
    table = table.astype(float)
    return np.column_stack([(table**2).sum(axis=1), table])


def _fleiss_batched(weights: npt.NDArray, features: npt.NDArray, m: int) -> npt.NDArray[np.float64]:
    sums = weights @ features
    n_items = weights.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        p_bar = (sums[:, 0] - n_items * m) / (n_items * m * (m - 1))
        p_cat = sums[:, 1:] / (n_items * m)[:, None]
        p_e = (p_cat**2).sum(axis=1)
        return (p_bar - p_e) / (1 - p_e)


def _coincidence_features(table: npt.NDArray) -> npt.NDArray[np.float64]:
    """Per item, its contribution to Krippendorff's coincidence matrix (flattened q²)."""
    table = table.astype(float)
    q = table.shape[1]
    m = table.sum(axis=1)
    pairable = m >= 2
    t = table[pairable]
    outer = t[:, :, None] * t[:, None, :] - t[:, None, :] * np.eye(q)[None]
    contrib = np.zeros((len(table), q * q))
    contrib[pairable] = (outer / (m[pairable] - 1)[:, None, None]).reshape(-1, q * q)
    return contrib


def _alpha_batched(
    weights: npt.NDArray, features: npt.NDArray, categories: Sequence[float], level: str
) -> npt.NDArray[np.float64]:
    q = len(categories)
    o = (weights @ features).reshape(-1, q, q)
    n_v = o.sum(axis=1)
    n = n_v.sum(axis=1)
    e = (n_v[:, :, None] * n_v[:, None, :] - n_v[:, None, :] * np.eye(q)[None]) / (n - 1)[:, None, None]
    values = np.asarray(categories, dtype=float)
    if level == "interval":
        d = np.broadcast_to((values[:, None] - values[None, :]) ** 2, o.shape)
    elif level == "nominal":
        d = np.broadcast_to(1.0 - np.eye(q), o.shape)
    elif level == "ordinal":
        # δ²(c, k) = (Σ_{g=c..k} n_g − (n_c + n_k) / 2)², Krippendorff (2011) eq. for ordinal data.
        cum = np.concatenate([np.zeros((len(n_v), 1)), np.cumsum(n_v, axis=1)], axis=1)
        lo = np.minimum.outer(np.arange(q), np.arange(q))
        hi = np.maximum.outer(np.arange(q), np.arange(q))
        between = cum[:, hi + 1] - cum[:, lo]
        d = (between - (n_v[:, :, None] + n_v[:, None, :]) / 2) ** 2
    else:
        raise AgreementError(f"unknown level of measurement {level!r}")
    with np.errstate(divide="ignore", invalid="ignore"):
        return 1 - (o * d).sum(axis=(1, 2)) / (e * d).sum(axis=(1, 2))


def _gwet_features(table: npt.NDArray, w: npt.NDArray) -> npt.NDArray[np.float64]:
    """Columns: pa_i (0 if unpairable), [r_i ≥ 2], [r_i ≥ 1], r_ik / r_i (q columns)."""
    table = table.astype(float)
    r = table.sum(axis=1)
    weighted = table @ w.T
    with np.errstate(divide="ignore", invalid="ignore"):
        pa_i = np.where(r >= 2, (table * (weighted - 1)).sum(axis=1) / (r * (r - 1)), 0.0)
        share = np.where(r[:, None] >= 1, table / r[:, None], 0.0)
    return np.column_stack([pa_i, r >= 2, r >= 1, share])


def _gwet_batched(weights: npt.NDArray, features: npt.NDArray, w: npt.NDArray) -> npt.NDArray[np.float64]:
    sums = weights @ features
    q = w.shape[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        pa = sums[:, 0] / sums[:, 1]
        pi = sums[:, 3:] / sums[:, 2][:, None]
        pe = w.sum() * (pi * (1 - pi)).sum(axis=1) / (q * (q - 1))
        return (pa - pe) / (1 - pe)


def _fleiss_resampled(resamples: Resamples, categories: Sequence[float]) -> npt.NDArray[np.float64]:
    if len(resamples.patterns) == 0:
        return np.zeros(0)
    m = int(resamples.patterns[0].sum())
    return _fleiss_batched(resamples.multiplicity, _fleiss_features(resamples.patterns), m)


def _alpha_resampled(level: str) -> Callable[[Resamples, Sequence[float]], npt.NDArray[np.float64]]:
    def resampled(resamples: Resamples, categories: Sequence[float]) -> npt.NDArray[np.float64]:
        features = _coincidence_features(resamples.patterns)
        return _alpha_batched(resamples.multiplicity, features, categories, level)

    return resampled


def _gwet_resampled(resamples: Resamples, categories: Sequence[float]) -> npt.NDArray[np.float64]:
    w = weight_matrix(categories, "ordinal")
    return _gwet_batched(resamples.multiplicity, _gwet_features(resamples.patterns, w), w)


def _bp_batched(weights: npt.NDArray, features: npt.NDArray) -> npt.NDArray[np.float64]:
    """Brennan–Prediger κ per row of ``weights`` from identity-weight :func:`_gwet_features`."""
    sums = weights @ features
    q = features.shape[1] - 3
    with np.errstate(divide="ignore", invalid="ignore"):
        pa = sums[:, 0] / sums[:, 1]
        return (pa - 1 / q) / (1 - 1 / q)


def _bp_resampled(resamples: Resamples, categories: Sequence[float]) -> npt.NDArray[np.float64]:
    features = _gwet_features(resamples.patterns, np.eye(len(categories)))
    return _bp_batched(resamples.multiplicity, features)


# ---------------------------------------------------------------- the table of coefficients
@dataclass(frozen=True)
class Coefficient:
    """One coefficient :func:`hcs.agreement.dimension_agreement` computes for a dimension.

    ``point(table, categories)`` is the estimate (raising :class:`AgreementError` where undefined);
    ``resampled(resamples, categories)`` its value on each bootstrap resample (None: no interval).
    ``rows`` says which count table it reads: ``"all"`` every rating, ``"first_k"`` the first k
    ratings of the items rated at least k times (Fleiss' κ, which needs the same n on every item).
    """

    name: str
    point: Callable[[npt.NDArray[np.int64], Sequence[float]], float]
    resampled: Callable[[Resamples, Sequence[float]], npt.NDArray[np.float64]] | None = None
    rows: str = "all"


# Every coefficient of a dimension, in the order the report lists them. A new coefficient is a
# function above and one row here; DimensionAgreement then carries it as ``result.<name>`` and
# ``result.<name>_ci95``.
COEFFICIENTS: tuple[Coefficient, ...] = (
    Coefficient("fleiss_kappa", lambda t, _c: fleiss_kappa(t), _fleiss_resampled, rows="first_k"),
    Coefficient(
        "alpha_ordinal", lambda t, c: krippendorff_alpha(t, c, "ordinal"), _alpha_resampled("ordinal")
    ),
    Coefficient(
        "alpha_interval", lambda t, c: krippendorff_alpha(t, c, "interval"), _alpha_resampled("interval")
    ),
    Coefficient("gwet_ac2", lambda t, c: gwet_ac2(t, c, "ordinal"), _gwet_resampled),
    Coefficient("brennan_prediger", brennan_prediger, _bp_resampled),
    Coefficient("percent_agreement", lambda t, _c: percent_agreement(t, 0)),
    Coefficient("percent_within_one", lambda t, _c: percent_agreement(t, 1)),
)
