"""Prediction-powered inference (PPI++) for a mean: a few human labels plus a judge on every item.

With ``n`` labelled items (human value ``Y`` and judge score ``Yhat``) and ``N`` unlabelled items
(judge score ``Yhat_u`` only), the power-tuned estimate of the human mean is

    θ̂(λ) = mean(λ · Yhat_u) + mean(Y − λ · Yhat),

unbiased for every λ; λ is chosen to minimise its variance and clipped to [0, 1], so a useless judge
falls back to the human-only mean (λ = 0) and a perfect one to PPI (λ = 1). The 95 % interval is the
normal one with standard error ``sqrt(var(λ Yhat_u) / N + var(Y − λ Yhat) / n)``.

Every formula here follows ``ppi_py`` (``ppi_mean_pointestimate``, ``ppi_mean_ci``, ``_calc_lam_glm``)
exactly, so the app's numbers equal the library's; the library itself is only a test dependency.

References
----------
.. [1] A. N. Angelopoulos, S. Bates, C. Fannjiang, M. I. Jordan and T. Zrnic, "Prediction-powered
   inference", *Science* 382(6671):669–674, 2023.
.. [2] A. N. Angelopoulos, J. C. Duchi and T. Zrnic, "PPI++: Efficient prediction-powered inference",
   arXiv:2311.01453, 2023.
.. [3] P. Boyeau, A. N. Angelopoulos, N. Yosef, J. Malik and M. I. Jordan, "AutoEval done right: using
   synthetic data for model evaluation", ICML 2025.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

__all__ = [
    "PPIMean",
    "classical_mean_ci",
    "equivalent_labels_saved",
    "ppi_lambda",
    "ppi_mean",
    "ppi_mean_many",
]


@dataclass(frozen=True)
class PPIMean:
    """A PPI++ estimate of a mean with the human-only and judge-only estimates beside it."""

    estimate: float
    ci95: tuple[float, float]
    n_labelled: int
    n_unlabelled: int
    lam: float
    human_only: float
    human_only_ci95: tuple[float, float]
    judge_only: float  # mean judge score over labelled and unlabelled items (biased; no interval)

    @property
    def width(self) -> float:
        return self.ci95[1] - self.ci95[0]

    @property
    def human_only_width(self) -> float:
        return self.human_only_ci95[1] - self.human_only_ci95[0]

    @property
    def labels_saved(self) -> float:
        """Extra human labels a human-only interval would need to be as narrow (see :func:`equivalent_labels_saved`)."""
        return equivalent_labels_saved(self.n_labelled, self.human_only_width, self.width)

    def to_json(self) -> dict:
        return {
            "estimate": self.estimate,
            "ci95": [self.ci95[0], self.ci95[1]],
            "n_labelled": self.n_labelled,
            "n_unlabelled": self.n_unlabelled,
            "lambda": self.lam,
            "human_only": {
                "estimate": self.human_only,
                "ci95": [self.human_only_ci95[0], self.human_only_ci95[1]],
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


def ppi_mean_many(y, yhat, yhat_unlabelled, *, alpha: float = 0.05, lam=None):
    """PPI++ estimates and intervals of many studies at once: arrays studies × items, one result per row.

    Returns ``(estimate, lo, hi, lam)``, each an array with one value per study. ``lam=None`` tunes λ
    per study; a number fixes it (1: plain PPI [1]_, 0: the human-only interval).
    """
    y, yhat, yu = (np.asarray(a, dtype=float) for a in (y, yhat, yhat_unlabelled))
    lam = (
        ppi_lambda(y, yhat, yu)
        if lam is None
        else np.broadcast_to(np.asarray(lam, dtype=float), y.shape[:-1])
    )
    lam_ = np.asarray(lam)[..., None]
    rectifier = y - lam_ * yhat
    estimate = (lam_ * yu).mean(-1) + rectifier.mean(-1)
    se = np.sqrt((lam_ * yu).var(-1) / yu.shape[-1] + rectifier.var(-1) / y.shape[-1])
    z = _z(alpha)
    return estimate, estimate - z * se, estimate + z * se, np.asarray(lam, dtype=float)


def classical_mean_ci(y, *, alpha: float = 0.05) -> tuple[float, float, float]:
    """Mean and normal interval of labelled values alone (``ppi_py.classical_mean_ci``; population SD).

    >>> classical_mean_ci([1., 3.])
    (2.0, 0.6140961756503223, 3.3859038243496777)
    """
    y = np.asarray(y, dtype=float)
    mean, se = float(y.mean()), float(y.std() / math.sqrt(len(y)))
    z = _z(alpha)
    return mean, mean - z * se, mean + z * se


def ppi_mean(y, yhat, yhat_unlabelled, *, alpha: float = 0.05) -> PPIMean | None:
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

    Returns
    -------
    PPIMean or None
        None when fewer than two items are labelled. Without unlabelled items PPI has nothing to add:
        the result is the human-only estimate with λ = 0.

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
    if not len(yu):
        return PPIMean(human, (h_lo, h_hi), len(y), 0, 0.0, human, (h_lo, h_hi), judge_only)
    est, lo, hi, lam = ppi_mean_many(y, yhat, yu, alpha=alpha)
    return PPIMean(
        float(est), (float(lo), float(hi)), len(y), len(yu), float(lam), human, (h_lo, h_hi), judge_only
    )


def equivalent_labels_saved(n_labelled: int, human_only_width: float, ppi_width: float) -> float:
    """Human labels a human-only interval would need beyond ``n_labelled`` to be as narrow as PPI's.

    A normal interval's width falls as 1/√n, so matching PPI's width takes n·(w_human / w_ppi)² labels.

    >>> equivalent_labels_saved(200, 0.2, 0.1)
    600.0
    """
    if not (ppi_width > 0 and math.isfinite(human_only_width)):
        return 0.0
    return float(n_labelled * (human_only_width / ppi_width) ** 2 - n_labelled)
