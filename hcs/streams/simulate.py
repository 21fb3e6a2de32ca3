"""A simulated judged stream, for the alert bench and the tests.

Each trace has a latent quality q ~ N(mean, sd) on the 1–5 scale. People rate it
``clip(round(q + rater effect + noise))`` with a fixed pool of raters, each with a lasting leniency
(rater effect ~ N(0, rater_sd)), k distinct raters per labelled trace. The judge scores
``clip(round(q + bias + judge noise))``: it follows the latent quality, so it tracks a product change, and
its noise sets its agreement with people (:func:`judge_noise_for_qwk` finds the noise for a target
quadratic-weighted κ of the judge against the rounded human median, the batch report's QWK).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hcs.calibration.metrics import quadratic_weighted_kappa, round_half_up


@dataclass(frozen=True)
class StreamModel:
    quality_mean: float = 3.3
    quality_sd: float = 0.9
    raters: int = 12
    rater_sd: float = 0.3  # lasting leniency of each rater
    rating_sd: float = 0.6  # noise of one rating
    judge_bias: float = 0.2
    scale: tuple[int, int] = (1, 5)


def _round_clip(x: np.ndarray, scale: tuple[int, int]) -> np.ndarray:
    return np.clip(round_half_up(x), scale[0], scale[1])


def simulate_window(
    rng: np.random.Generator,
    n: int,
    k: int,
    judge_noise: float,
    *,
    model: StreamModel = StreamModel(),
    effects: np.ndarray | None = None,
    shift: float = 0.0,
    rating_sd: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """One window's labelled traces: (human scores n × raters with NaN, judge scores n).

    ``effects`` are the raters' leniencies (drawn when not given); ``shift`` moves the latent quality
    (a product change); ``rating_sd`` overrides the model's rating noise (a rater drift).
    """
    if effects is None:
        effects = rng.normal(0, model.rater_sd, model.raters)
    q = rng.normal(model.quality_mean + shift, model.quality_sd, n)
    who = np.argsort(rng.random((n, len(effects))), axis=1)[:, :k]
    noise = model.rating_sd if rating_sd is None else rating_sd
    human = np.full((n, len(effects)), np.nan)
    rows = np.repeat(np.arange(n), k)
    scores = q[:, None] + effects[who] + rng.normal(0, noise, (n, k))
    human[rows, who.ravel()] = _round_clip(scores, model.scale).ravel()
    judge = _round_clip(q + model.judge_bias + rng.normal(0, judge_noise, n), model.scale)
    return human, judge


def qwk_of(human: np.ndarray, judge: np.ndarray, scale: tuple[int, int] = (1, 5)) -> float:
    """QWK of the judge against the rounded human median, as ``hcs.calibration.calibrate_judge`` computes it."""
    median = np.nanmedian(human, axis=1)
    cat = np.clip(round_half_up(median), scale[0], scale[1]).astype(int)
    return quadratic_weighted_kappa(cat, np.asarray(judge, dtype=int), scale)


def judge_noise_for_qwk(
    target: float, *, model: StreamModel = StreamModel(), k: int = 3, n: int = 200_000, seed: int = 0
) -> float:
    """The judge noise whose QWK against the human median is ``target`` (bisection on one large sample,
    rater pools drawn afresh every ``n / 50`` traces). The bench's figures use the default ``n``:
    noise 0.51 for a QWK of 0.70 and 0.94 for 0.55.

    >>> round(judge_noise_for_qwk(0.70, n=4_000), 1)
    0.5
    """
    lo, hi = 0.01, 5.0
    pools = 50  # the rater pool is drawn anew per stream: average the QWK over many pools
    for _ in range(22):
        mid = (lo + hi) / 2
        rng = np.random.default_rng(seed)
        windows = [simulate_window(rng, n // pools, k, mid, model=model) for _ in range(pools)]
        human = np.concatenate([w[0] for w in windows])
        judge = np.concatenate([w[1] for w in windows])
        lo, hi = (mid, hi) if qwk_of(human, judge, model.scale) > target else (lo, mid)
    return (lo + hi) / 2
