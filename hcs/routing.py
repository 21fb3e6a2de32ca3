"""Human labels where the judge is unsure: per-item uncertainty, sampling probabilities and the
active-inference estimate that stays unbiased when labels are not drawn uniformly.

Uncertainty is put on the rubric scale (points), so its parts compare: the SD of several judges'
scores, the SD of one judge's repeated samples, a stated confidence ``c`` as ``(1 − c) · range / 2``
(the largest SD a score on the scale can have, shrunk by the confidence), and closeness to a cap as
``0.5 · max(0, 1 − distance)`` (a score within a point of a cap value may fall on the wrong side).
An item's uncertainty is its largest part; the reason names it.

Labelling the most uncertain items and averaging as if they were a random sample biases the estimate
(those items are not typical). Active inference [1]_ labels item *i* with probability π_i (larger where
the judge is unsure) and weights its correction by 1/π_i:

    θ̂ = mean_i [ g_i + (Y_i − g_i) ξ_i / π_i ],   g_i = λ f_i + b,   ξ_i ~ Bernoulli(π_i),

which is unbiased for the mean of Y for any fixed λ, b and any π > 0; λ is tuned to minimise the
variance as in PPI++ [2]_, and so is the offset b.

References
----------
.. [1] T. Zrnic and E. J. Candès, "Active statistical inference", ICML 2024, arXiv:2403.03208.
.. [2] A. N. Angelopoulos, J. C. Duchi and T. Zrnic, "PPI++: Efficient prediction-powered inference",
   arXiv:2311.01453, 2023.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy.stats import t as t_dist

from hcs.ppi import PPIMean

__all__ = [
    "ActiveMean",
    "ActivePPIMean",
    "Uncertainty",
    "active_mean",
    "active_ppi_mean",
    "labelled_so_far",
    "item_uncertainty",
    "most_uncertain",
    "sampling_probabilities",
    "width_against_uniform",
]


@dataclass(frozen=True, eq=False)
class Uncertainty:
    """Per item: uncertainty in rubric points (NaN: nothing known) and the part that set it."""

    value: np.ndarray
    reason: tuple[str, ...]


def _sd(x: np.ndarray) -> np.ndarray:
    """Row-wise sample SD (ddof 1) over finite values; NaN for rows with fewer than two."""
    x = np.atleast_2d(np.asarray(x, dtype=float))
    count = np.isfinite(x).sum(axis=1)
    mean = np.nanmean(np.where(count[:, None] > 0, x, 0.0), axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        ss = np.nansum((x - mean[:, None]) ** 2, axis=1)
        return np.where(count >= 2, np.sqrt(ss / np.maximum(count - 1, 1)), np.nan)


def item_uncertainty(
    *,
    n_items: int,
    judge_scores=None,
    samples=None,
    confidence=None,
    caps=(),
    scale: tuple[float, float] = (1, 5),
) -> Uncertainty:
    """Each item's uncertainty from what is known about its judge scores on one dimension.

    Parameters
    ----------
    n_items : int
    judge_scores : array_like, shape (items, judges), optional
        Scores of several judges (NaN: missing). Their SD is "judges disagree".
    samples : array_like, shape (items, samples), optional
        One judge's repeated samples (NaN: missing). Their SD is "samples vary".
    confidence : array_like, shape (items,), optional
        A stated confidence in 0–1 (NaN: none), e.g. from token log-probabilities.
    caps : sequence of float
        Score values a rubric rule caps this dimension at; the judges' mean score is compared with them.
    scale : (low, high)

    Examples
    --------
    >>> u = item_uncertainty(n_items=2, judge_scores=[[1, 3], [4, 4]], confidence=[np.nan, 0.9])
    >>> [round(v, 3) for v in u.value], u.reason
    ([1.414, 0.2], ('judges disagree (SD 1.41)', 'low confidence (0.90)'))
    """
    half_range = (scale[1] - scale[0]) / 2
    parts: list[tuple[np.ndarray, str, np.ndarray]] = []  # (uncertainty, reason format, value shown in it)
    if judge_scores is not None:
        js = np.asarray(judge_scores, dtype=float).reshape(n_items, -1)
        sd = _sd(js)
        parts.append((sd, "judges disagree (SD {:.2f})", sd))
        if caps:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # items no judge scored: NaN, left out below
                mean_score = np.nanmean(js, axis=1)
            distance = np.min(np.abs(mean_score[:, None] - np.asarray(caps, dtype=float)[None, :]), axis=1)
            parts.append((0.5 * np.clip(1 - distance, 0, None), _cap_reason, mean_score))
    if samples is not None:
        sd = _sd(np.asarray(samples, dtype=float).reshape(n_items, -1))
        parts.append((sd, "samples vary (SD {:.2f})", sd))
    if confidence is not None:
        c = np.asarray(confidence, dtype=float).reshape(n_items)
        parts.append(((1 - np.clip(c, 0, 1)) * half_range, "low confidence ({:.2f})", c))
    value = np.full(n_items, np.nan)
    reason = [""] * n_items
    for values, fmt, shown in parts:
        better = np.isfinite(values) & ~(values <= value)  # NaN comparisons are False: the first finite wins
        for i in np.flatnonzero(better):
            text = fmt(values[i]) if callable(fmt) else fmt
            value[i], reason[i] = values[i], text.format(shown[i])
    return Uncertainty(value=value, reason=tuple(reason))


def _cap_reason(part: float) -> str:
    # A part of 0 is an item at least a point from every cap: not a reason for doubt.
    return "near a cap (score {:.2f})" if part > 0 else "far from every cap (score {:.2f})"


def most_uncertain(by_dimension: dict[str, Uncertainty]) -> Uncertainty:
    """Per item, the largest uncertainty over dimensions, its reason prefixed with the dimension."""
    names = list(by_dimension)
    if not names:
        return Uncertainty(np.zeros(0), ())
    stack = np.stack([by_dimension[n].value for n in names])
    finite = np.isfinite(stack)
    best = np.argmax(np.where(finite, stack, -np.inf), axis=0)
    items = np.arange(stack.shape[1])
    value = np.where(finite.any(axis=0), stack[best, items], np.nan)
    reason = tuple(
        f"{names[b]}: {by_dimension[names[b]].reason[i]}" if np.isfinite(value[i]) else ""
        for i, b in enumerate(best)
    )
    return Uncertainty(value=value, reason=reason)


def sampling_probabilities(uncertainty, budget: float, *, mix: float = 0.1) -> np.ndarray:
    """Labelling probabilities π ∝ uncertainty with Σπ = ``budget``, each at most 1.

    A share ``mix`` of the budget is spread uniformly so that no π is tiny (a tiny π makes 1/π, and the
    variance, explode; [1]_ §4 mixes with the uniform rule the same way): every π is at least
    ``mix · budget / N`` (water-filling only raises the others), so no label weighs more than
    1 / mix times what it would in a uniform draw. Items with unknown uncertainty get the mean of the
    known ones.

    >>> sampling_probabilities([1, 1, 2, 4], 2, mix=0)
    array([0.25, 0.25, 0.5 , 1.  ])
    """
    u = np.asarray(uncertainty, dtype=float)
    n = len(u)
    if not 0 < budget <= n:
        raise ValueError(f"the budget must lie in (0, {n}], not {budget}")
    if not 0 <= mix <= 1:
        raise ValueError(f"mix must lie in [0, 1], not {mix}")
    known = np.isfinite(u)
    u = np.where(known, np.maximum(u, 0), np.mean(u[known]) if known.any() else 1.0)
    if u.sum() <= 0:
        u = np.ones(n)
    uniform = np.full(n, budget / n)
    pi = (1 - mix) * budget * u / u.sum() + mix * uniform
    for _ in range(n):  # water-filling: cap at 1 and give the excess to the rest in proportion
        over = pi > 1
        if not over.any():
            break
        pi[over] = 1.0
        rest = ~over & (pi < 1)
        excess = budget - pi.sum()
        if not rest.any() or excess <= 0:
            break
        pi[rest] += excess * pi[rest] / pi[rest].sum()
    return np.minimum(pi, 1.0)


def width_against_uniform(pi, residual_var=None) -> float:
    """The expected width of the active-inference interval over that of a uniform draw of the same expected
    size (π = Σπ / N everywhere), before any label is known.

    With a fixed predictor the estimator's variance is Σ_i (1/π_i − 1) v_i / N², v_i the squared error of
    item i's prediction ([1]_, §3), so the ratio of widths is √(Σ (1/π_i − 1) v_i / Σ (N/B − 1) v_i).
    ``residual_var`` is v (None: the same for every item). With equal v a uniform draw is best (Jensen):
    the ratio is ≥ 1, and routing pays off only as far as the uncertainty that set π tracks the error.

    >>> round(width_against_uniform([0.5, 0.5, 0.5, 0.5]), 6)
    1.0
    >>> width_against_uniform([0.2, 0.2, 0.8, 0.8]) > 1
    True
    >>> round(width_against_uniform([0.2, 0.2, 0.8, 0.8], [0.1, 0.1, 4.0, 4.0]), 3)
    0.584
    """
    p = np.asarray(pi, dtype=float)
    v = np.ones(len(p)) if residual_var is None else np.asarray(residual_var, dtype=float)
    uniform = p.sum() / len(p)
    return float(np.sqrt(np.sum((1 / p - 1) * v) / np.sum((1 / uniform - 1) * v)))


@dataclass(frozen=True)
class ActiveMean:
    estimate: float
    ci95: tuple[float, float]  # for the mean of the population the items were drawn from
    n_labelled: int
    n_items: int
    lam: float
    offset: float  # b of the predictor λ·f + b
    ci95_batch: tuple[float, float] | None = None  # for the mean of these items (the draw's design)


def active_mean(
    y, yhat, labelled, pi, *, alpha: float = 0.05, lam: float | None = None, offset: float | None = None
) -> ActiveMean:
    """The active-inference estimate of the mean of ``y`` over all items ([1]_, eq. 3, with PPI++'s λ).

    Parameters
    ----------
    y : array_like
        Human values; read only where ``labelled``.
    yhat : array_like
        Judge scores of every item.
    labelled : array_like of bool
        ξ: whether the item was drawn for labelling.
    pi : array_like
        The probability it had of being drawn (0 < π ≤ 1).
    lam : float, optional
        Fixed λ; by default λ is tuned (clipped to [0, 1]) with an offset b to minimise the plug-in
        variance. The predictor is λ·f + b: the offset centres the weighted corrections, without which
        a judge with a level unlike people's inflates the 1/π-weighted variance. Like PPI++'s λ, the
        tuned values cost a bias of order 1/n.
    offset : float, optional
        Fixed b; by default tuned.

    Examples
    --------
    With π = 1 everywhere every item is labelled and the estimate is the plain mean:

    >>> active_mean([1., 2., 6.], [0., 0., 0.], [True, True, True], [1., 1., 1.]).estimate
    3.0
    """
    f = np.asarray(yhat, dtype=float)
    xi = np.asarray(labelled, dtype=bool)
    p = np.asarray(pi, dtype=float)
    if np.any(p[xi] <= 0) or np.any(p > 1):
        raise ValueError("each probability must lie in (0, 1]")
    g = np.where(xi, 1.0 / np.where(p > 0, p, 1.0), 0.0)
    yg = np.where(xi, np.asarray(y, dtype=float), 0.0) * g
    a, c = f * (1 - g), 1 - g  # T = Yg + λ·a + b·c: any λ, b leave E[T] = mean(Y)
    tuned = [c] if offset is None else []
    if lam is None:
        lam, b = _tune(yg, a, c)
        tuned += [a] if 0 < lam < 1 else []  # a λ clipped to 0 or 1 was not fitted
    else:
        b = _offset(yg + lam * a, c)
    if offset is not None:
        b = offset
    terms = yg + lam * a + b * c
    estimate = float(terms.mean())
    # λ and b are fitted to these terms by least squares, so each term's plug-in deviation is shrunk by the
    # fit, most where the weight 1/π is largest; dividing by 1 − leverage (HC3, MacKinnon & White 1985) puts
    # that back, and Student's t counts the labelled items, which carry the variance. With the plug-in
    # variance and z the interval covered 0.936-0.943 (tests/hcs/test_routing_coverage.py).
    inflate, df = _leverage_inflation(c, tuned, xi)
    se = float(np.sqrt(np.sum(((terms - estimate) * inflate) ** 2)) / len(f))
    # For these items' own mean only the draw is random: θ̂ − θ = Σ (Y − g)(ξ/π − 1) / M with independent
    # draws, whose variance Σ (Y − g)² (1 − π)/π / M² is estimated without bias by the drawn items'
    # Σ (Y − g)² (1 − π)/π² / M² (Poisson sampling: Särndal, Swensson & Wretman 1992, §3.5).
    resid = np.where(xi, np.asarray(y, dtype=float) - lam * f - b, 0.0) * inflate
    se_batch = float(np.sqrt(np.sum(resid**2 * (1 - p) * g**2)) / len(f))
    q = float(t_dist.ppf(1 - alpha / 2, df))
    return ActiveMean(
        estimate,
        (estimate - q * se, estimate + q * se),
        int(xi.sum()),
        len(f),
        float(lam),
        float(b),
        (estimate - q * se_batch, estimate + q * se_batch),
    )


def _leverage_inflation(c: np.ndarray, tuned: list[np.ndarray], xi: np.ndarray) -> tuple[np.ndarray, int]:
    """1 / (1 − h) per term, h its leverage in the least-squares fit (a constant and the ``tuned`` columns),
    and the degrees of freedom left: labelled items less the fit's rank (at least 1). A term the fit
    reproduces exactly (h = 1) has no residual to inflate and keeps a factor of 1."""
    x = np.column_stack([np.ones(len(c)), *tuned])
    h = np.einsum("ij,jk,ik->i", x, np.linalg.pinv(x.T @ x), x)
    inflate = np.where(h < 1 - 1e-9, 1 / np.maximum(1 - h, 1e-9), 1.0)
    return inflate, max(1, int(xi.sum()) - int(np.linalg.matrix_rank(x)))


def _offset(t: np.ndarray, c: np.ndarray) -> float:
    """The b minimising Var(t + b·c)."""
    var = c.var()
    return 0.0 if var <= 0 else float(-np.mean((t - t.mean()) * (c - c.mean())) / var)


def _tune(yg: np.ndarray, a: np.ndarray, c: np.ndarray) -> tuple[float, float]:
    """(λ, b) minimising the plug-in Var(Yg + λa + b·c): least squares of −Yg on (a, c), λ kept in [0, 1]."""
    design = np.column_stack([a - a.mean(), c - c.mean()])
    coef, *_ = np.linalg.lstsq(design, -(yg - yg.mean()), rcond=None)
    lam = float(np.clip(coef[0], 0, 1))
    return lam, _offset(yg + lam * a, c)


def labelled_so_far(pi, selected, labelled, strata=None) -> tuple[np.ndarray, np.ndarray]:
    """ξ and π for :func:`active_mean` while some selected items still wait for their label.

    Items selected with probability π and labelled in a random order are, so far, a second-phase
    random sample: within each stratum a selected item is labelled with probability (labelled / selected),
    so π is scaled by that share (two-phase sampling). ``strata`` (optional labels per item) keeps the
    share apart where the order is random only within a group (e.g. items labelled before a draw).
    Returns ``(xi, pi_used)``: ξ = selected and labelled. In a stratum where no selected item has its
    label yet the share is 0, and so is π: nothing there could have been labelled so far, and
    :func:`active_ppi_mean` gives no estimate rather than one that stands on the other strata alone.

    >>> xi, p = labelled_so_far([0.5, 0.5, 0.2, 1.0], [True, True, False, True], [True, False, True, True])
    >>> xi.tolist(), p.tolist()
    ([True, False, False, True], [0.3333333333333333, 0.3333333333333333, 0.2, 0.6666666666666666])
    """
    pi = np.array(pi, dtype=float)
    selected = np.asarray(selected, dtype=bool)
    xi = selected & np.asarray(labelled, dtype=bool)
    groups = np.zeros(len(pi), dtype=int) if strata is None else np.asarray(strata)
    for group in np.unique(groups):
        chosen = selected & (groups == group)
        got = xi & (groups == group)
        if chosen.any():
            pi[chosen] *= got.sum() / chosen.sum()
    return xi, pi


@dataclass(frozen=True)
class ActivePPIMean(PPIMean):
    """:class:`hcs.ppi.PPIMean`'s columns for labels drawn with probabilities π: the estimate is
    :func:`active_mean`, human-only is the same with λ = 0 (the 1/π-weighted labels alone), and
    ``n_unlabelled`` counts the items of the population without a label the estimate uses."""

    offset: float = 0.0

    def to_json(self) -> dict:
        return {**super().to_json(), "estimator": "active_inference", "offset": self.offset}


def active_ppi_mean(y, yhat, labelled, pi, *, alpha: float = 0.05) -> ActivePPIMean | None:
    """The active-inference estimate beside the weighted human-only one and the judge's mean.

    Arguments as :func:`active_mean`. None when fewer than two items are labelled, or when an item of the
    population could not have been labelled (π = 0: its stratum of the draw has no label yet).

    >>> r = active_ppi_mean([2., 4., 0., 0.], [2., 3., 3., 4.], [True, True, False, False], [.5, .5, .5, .5])
    >>> round(r.human_only, 6), r.n_labelled, r.n_unlabelled, r.judge_only
    (3.0, 2, 2, 3.0)
    """
    f = np.asarray(yhat, dtype=float)
    xi = np.asarray(labelled, dtype=bool)
    if xi.sum() < 2 or np.any(np.asarray(pi, dtype=float) <= 0):
        return None
    est = active_mean(y, f, xi, pi, alpha=alpha)
    human = active_mean(y, f, xi, pi, alpha=alpha, lam=0.0)
    return ActivePPIMean(
        estimate=est.estimate,
        ci95=est.ci95_batch,
        n_labelled=est.n_labelled,
        n_unlabelled=est.n_items - est.n_labelled,
        lam=est.lam,
        human_only=human.estimate,
        human_only_ci95=human.ci95_batch,
        judge_only=float(f.mean()),
        ci95_superpopulation=est.ci95,
        human_only_ci95_superpopulation=human.ci95,
        offset=est.offset,
    )
