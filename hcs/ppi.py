"""Prediction-powered inference (PPI++) for a mean: a few human labels plus a judge on every item.

With ``n`` labelled items (human value ``Y`` and judge score ``Yhat``) and ``N`` unlabelled items
(judge score ``Yhat_u`` only), the power-tuned estimate of the human mean is

    θ̂(λ) = mean(λ · Yhat_u) + mean(Y − λ · Yhat),

unbiased for every λ; λ is chosen to minimise its variance and clipped to [0, 1], so a useless judge
falls back to the human-only mean (λ = 0) and a perfect one to PPI (λ = 1).

Two 95 % intervals, for two targets:

- ``ci95_superpopulation``: the mean of the population the batch's items were drawn from, standard
  error ``sqrt(var(λ Yhat_u) / N + var(Y − λ Yhat) / n)`` ([2]_). Every formula of it follows ``ppi_py``
  (``ppi_mean_pointestimate``, ``ppi_mean_ci``, ``_calc_lam_glm``) exactly, so the app's numbers equal
  the library's; the library itself is only a test dependency.
- ``ci95``: the mean of the batch's own n + N items, with the labelled items a simple random sample of
  them. The judge's scores are known on every item, so with M = n + N the estimate is
  ``mean(Y) − λ (M/N) (mean(Yhat) − mean over all M of Yhat)``: a difference estimator whose only random
  part is the labelled items' mean of e = Y − λ (M/N) Yhat. Its standard error is the survey-sampling
  one with the finite-population correction, ``sqrt((1 − n/M) · s²(e) / n)`` ([4]_, theorems 2.2 and 2.4, §7.2;
  the derivation is in docs/ppi.md). Every item labelled makes it a point: the batch's mean is known.

References
----------
.. [1] A. N. Angelopoulos, S. Bates, C. Fannjiang, M. I. Jordan and T. Zrnic, "Prediction-powered
   inference", *Science* 382(6671):669–674, 2023.
.. [2] A. N. Angelopoulos, J. C. Duchi and T. Zrnic, "PPI++: Efficient prediction-powered inference",
   arXiv:2311.01453, 2023.
.. [3] P. Boyeau, A. N. Angelopoulos, N. Yosef, J. Malik and M. I. Jordan, "AutoEval done right: using
   synthetic data for model evaluation", ICML 2025.
.. [4] W. G. Cochran, *Sampling Techniques*, 3rd ed., Wiley, 1977.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm
from scipy.stats import t as t_dist

__all__ = [
    "PPIMean",
    "batch_mean_se",
    "classical_mean_ci",
    "equivalent_labels_saved",
    "ppi_lambda",
    "ppi_mean",
    "ppi_mean_many",
]


@dataclass(frozen=True)
class PPIMean:
    """A PPI++ estimate of a mean with the human-only and judge-only estimates beside it.

    ``ci95`` is for the mean of the batch's own items, ``ci95_superpopulation`` for the mean of the
    population they were drawn from (``ppi_py``'s interval); the human-only pair likewise. When the
    super-population intervals are not given they are the batch's (an estimator with one interval)."""

    estimate: float
    ci95: tuple[float, float]
    n_labelled: int
    n_unlabelled: int
    lam: float
    human_only: float
    human_only_ci95: tuple[float, float]
    judge_only: float  # mean judge score over labelled and unlabelled items (biased; no interval)
    ci95_superpopulation: tuple[float, float] | None = None
    human_only_ci95_superpopulation: tuple[float, float] | None = None

    def __post_init__(self):
        if self.ci95_superpopulation is None:
            object.__setattr__(self, "ci95_superpopulation", self.ci95)
        if self.human_only_ci95_superpopulation is None:
            object.__setattr__(self, "human_only_ci95_superpopulation", self.human_only_ci95)

    @property
    def width(self) -> float:
        return self.ci95[1] - self.ci95[0]

    @property
    def human_only_width(self) -> float:
        return self.human_only_ci95[1] - self.human_only_ci95[0]

    @property
    def superpopulation_width(self) -> float:
        return self.ci95_superpopulation[1] - self.ci95_superpopulation[0]

    @property
    def labels_saved(self) -> float:
        """Extra human labels a human-only interval would need to be as narrow (see :func:`equivalent_labels_saved`).

        Read on the super-population widths: only there does a width fall as 1/√n (the batch's interval
        also shrinks with the share of the batch labelled)."""
        h = self.human_only_ci95_superpopulation
        return equivalent_labels_saved(self.n_labelled, h[1] - h[0], self.superpopulation_width)

    def to_json(self) -> dict:
        return {
            "estimate": self.estimate,
            "ci95": [self.ci95[0], self.ci95[1]],
            "ci95_superpopulation": [self.ci95_superpopulation[0], self.ci95_superpopulation[1]],
            "n_labelled": self.n_labelled,
            "n_unlabelled": self.n_unlabelled,
            "lambda": self.lam,
            "human_only": {
                "estimate": self.human_only,
                "ci95": [self.human_only_ci95[0], self.human_only_ci95[1]],
                "ci95_superpopulation": [
                    self.human_only_ci95_superpopulation[0],
                    self.human_only_ci95_superpopulation[1],
                ],
            },
            "judge_only": {"estimate": self.judge_only},
        }


def _z(alpha: float) -> float:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), not {alpha}")
    return float(norm.ppf(1 - alpha / 2))


def ppi_lambda(y, yhat, yhat_unlabelled):
    """The power-tuned λ of PPI++ for a mean, clipped to [0, 1] ([2]_, eq. 6; ``ppi_py._calc_lam_glm``).

    λ = Cov(Y, Yhat) / ((1 + n/N) · Var(Yhat)), the covariance over the labelled items (divisor n) and
    the variance over all judge scores (divisor n + N − 1). The last axis is the items' axis, so a
    stack of studies (studies × items) gives one λ per study. A judge with no variance gives λ = 0.

    >>> float(ppi_lambda([1., 2., 3., 4.], [1., 2., 3., 4.], [1., 2., 3., 4.]))
    0.4375
    """
    y, yhat, yu = (np.asarray(a, dtype=float) for a in (y, yhat, yhat_unlabelled))
    n, big_n = y.shape[-1], yu.shape[-1]
    cov = ((y - y.mean(-1, keepdims=True)) * (yhat - yhat.mean(-1, keepdims=True))).mean(-1)
    var = np.concatenate([yhat, yu], axis=-1).var(-1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = np.where(var > 0, cov / ((1 + n / big_n) * np.where(var > 0, var, 1.0)), 0.0)
    return np.clip(lam, 0.0, 1.0)


def ppi_mean_many(
    y, yhat, yhat_unlabelled, *, alpha: float = 0.05, lam=None, batch: bool = False, tuned: bool | None = None
):
    """PPI++ estimates and intervals of many studies at once: arrays studies × items, one result per row.

    Returns ``(estimate, lo, hi, lam)``, each an array with one value per study. ``lam=None`` tunes λ
    per study; a number fixes it (1: plain PPI [1]_, 0: the human-only interval). The interval is the
    super-population one (``ppi_py``'s), or with ``batch=True`` the one for the mean of the study's own
    labelled and unlabelled items (:func:`batch_mean_se`); ``tuned`` says whether ``lam`` was tuned on these
    labels (the default when ``lam`` is None), which costs the batch interval one degree of freedom.
    """
    tuned = lam is None if tuned is None else tuned
    y, yhat, yu = (np.asarray(a, dtype=float) for a in (y, yhat, yhat_unlabelled))
    lam = (
        ppi_lambda(y, yhat, yu)
        if lam is None
        else np.broadcast_to(np.asarray(lam, dtype=float), y.shape[:-1])
    )
    lam_ = np.asarray(lam)[..., None]
    rectifier = y - lam_ * yhat
    estimate = (lam_ * yu).mean(-1) + rectifier.mean(-1)
    if batch:
        se = batch_mean_se(y, yhat, yu.shape[-1], lam, tuned=tuned)
        # Student's t on the residuals' degrees of freedom, as for the regression estimator (Cochran 1977,
        # §7.3): with a few dozen labels the normal quantile under-covers the batch's mean.
        z = float(t_dist.ppf(1 - alpha / 2, max(1, y.shape[-1] - (2 if tuned else 1))))
    else:
        se = np.sqrt((lam_ * yu).var(-1) / yu.shape[-1] + rectifier.var(-1) / y.shape[-1])
        z = _z(alpha)
    return estimate, estimate - z * se, estimate + z * se, np.asarray(lam, dtype=float)


def batch_mean_se(y, yhat, n_unlabelled: int, lam, *, tuned: bool = False):
    """Standard error of the PPI++ estimate as an estimate of the mean of the batch's own M = n + N items.

    The labelled items are a simple random sample of the batch and the judge has scored all of them, so
    the estimate equals mean(Y) − λ (M/N) (mean(Yhat) − Yhat's mean over the batch): the last mean is a
    fixed number of the batch, and only the labelled mean of e = Y − λ (M/N) Yhat varies from one
    labelled set to another. Hence SE = sqrt((1 − n/M) · s²(e) / n), s² with divisor n − 1 (Cochran
    1977, theorems 2.2 and 2.4; §7.2 for the difference estimator), or n − 2 when λ was ``tuned`` on the
    same labels, as for the regression estimator (§7.3, eq. 7.23). Items' axis last; λ one per study. With no
    unlabelled item the batch's mean is known exactly: SE 0.

    >>> float(batch_mean_se([1., 2., 3.], [1., 2., 3.], 3, 0.0)) == (0.5 * 1.0 / 3) ** 0.5
    True
    """
    y, yhat = np.asarray(y, dtype=float), np.asarray(yhat, dtype=float)
    n = y.shape[-1]
    if n_unlabelled == 0:
        return np.zeros(y.shape[:-1])
    big_m = n + n_unlabelled
    e = y - np.asarray(lam, dtype=float)[..., None] * (big_m / n_unlabelled) * yhat
    ddof = 2 if tuned and n > 2 else 1
    return np.sqrt((1 - n / big_m) * e.var(-1, ddof=ddof) / n)


def classical_mean_ci(y, *, alpha: float = 0.05) -> tuple[float, float, float]:
    """Mean and normal interval of labelled values alone (``ppi_py.classical_mean_ci``; population SD).

    >>> classical_mean_ci([1., 3.])
    (2.0, 0.6140961756503223, 3.3859038243496777)
    """
    y = np.asarray(y, dtype=float)
    mean, se = float(y.mean()), float(y.std() / math.sqrt(len(y)))
    z = _z(alpha)
    return mean, mean - z * se, mean + z * se


def ppi_mean(
    y, yhat, yhat_unlabelled, *, alpha: float = 0.05, n_population: int | None = None
) -> PPIMean | None:
    """The PPI++ estimate of the mean of ``y`` with the human-only and judge-only estimates.

    Parameters
    ----------
    y : array_like
        Human values of the labelled items.
    yhat : array_like
        Judge scores of the same items, in the same order.
    yhat_unlabelled : array_like
        Judge scores of items no person has labelled.
    alpha : float
        1 − the interval's coverage (0.05 for 95 %).
    n_population : int, optional
        The number of items whose mean ``ci95`` is for, when the judge scored only a simple random
        sample of them (M = n + N of P). The estimate of the M items' mean is then also one of the P
        items' mean, and the interval adds the variance of the M items' mean about the P items',
        ``(1 − M/P) s²(y) / M`` (Cochran 1977, theorem 2.2, two-phase sampling §12.2), with ``s²(y)``
        read on the labelled items. Default: M, the items given.

    Returns
    -------
    PPIMean or None
        None when fewer than two items are labelled. Without unlabelled items PPI has nothing to add:
        the result is the human-only estimate with λ = 0, and the batch's interval is that one point.

    Examples
    --------
    >>> r = ppi_mean([3., 4., 2., 5.], [3., 4., 3., 5.], [4., 2., 3., 5., 4., 1.])
    >>> round(r.estimate, 6), round(r.lam, 6)
    (3.308594, 0.328125)
    """
    y, yhat, yu = (np.asarray(a, dtype=float).ravel() for a in (y, yhat, yhat_unlabelled))
    if len(y) != len(yhat):
        raise ValueError(f"y has {len(y)} values but yhat has {len(yhat)}")
    if len(y) < 2:
        return None
    human, h_lo, h_hi = classical_mean_ci(y, alpha=alpha)
    judge_only = float(np.concatenate([yhat, yu]).mean())
    big_m = len(y) + len(yu)
    if n_population is not None and n_population < big_m:
        raise ValueError(f"n_population {n_population} is below the {big_m} items given")
    population = big_m if n_population is None else n_population
    if not len(yu):
        # Every item the judge scored is labelled: PPI has nothing to add. Their mean is known, so the
        # interval is a point unless they are a sample of a larger population.
        point = _population_ci(human, 0.0, y, big_m, population, alpha=alpha, df=len(y) - 1)
        return PPIMean(human, point, len(y), 0, 0.0, human, point, judge_only, (h_lo, h_hi), (h_lo, h_hi))
    est, lo, hi, lam = ppi_mean_many(y, yhat, yu, alpha=alpha)
    _, b_lo, b_hi, _ = ppi_mean_many(y, yhat, yu, alpha=alpha, lam=lam, batch=True, tuned=True)
    _, hb_lo, hb_hi, _ = ppi_mean_many(y, yhat, yu, alpha=alpha, lam=0.0, batch=True)
    if population > big_m:
        se = batch_mean_se(y, yhat, len(yu), lam, tuned=True)
        b_lo, b_hi = _population_ci(float(est), float(se), y, big_m, population, alpha=alpha, df=len(y) - 2)
        se = batch_mean_se(y, yhat, len(yu), 0.0)
        hb_lo, hb_hi = _population_ci(human, float(se), y, big_m, population, alpha=alpha, df=len(y) - 1)
    return PPIMean(
        estimate=float(est),
        ci95=(float(b_lo), float(b_hi)),
        n_labelled=len(y),
        n_unlabelled=len(yu),
        lam=float(lam),
        human_only=human,
        human_only_ci95=(float(hb_lo), float(hb_hi)),
        judge_only=judge_only,
        ci95_superpopulation=(float(lo), float(hi)),
        human_only_ci95_superpopulation=(h_lo, h_hi),
    )


def _population_ci(estimate, se, y, big_m, population, *, alpha, df) -> tuple[float, float]:
    """The interval for the mean of ``population`` items from an estimate of the mean of ``big_m`` of them
    (a simple random sample) with standard error ``se``: the two variances add."""
    extra = (1 - big_m / population) * float(np.var(y, ddof=1)) / big_m
    half = float(t_dist.ppf(1 - alpha / 2, max(1, df))) * math.sqrt(se**2 + extra)
    return (estimate - half, estimate + half)


def equivalent_labels_saved(n_labelled: int, human_only_width: float, ppi_width: float) -> float:
    """Human labels a human-only interval would need beyond ``n_labelled`` to be as narrow as PPI's.

    A normal interval's width falls as 1/√n, so matching PPI's width takes n·(w_human / w_ppi)² labels.

    >>> equivalent_labels_saved(200, 0.2, 0.1)
    600.0
    """
    if not (ppi_width > 0 and math.isfinite(human_only_width)):
        return 0.0
    return float(n_labelled * (human_only_width / ppi_width) ** 2 - n_labelled)
