"""Self-consistency of a judge: the same prompt scored several times at temperature > 0.

For item *i* with samples x_i1 … x_iS and human mean h_i, the mean squared deviation of the samples from
the human mean splits exactly into the squared error of the judge's own mean and its spread:

    mean_s (x_is − h_i)²  =  (x̄_i − h_i)²  +  v_i,    v_i = mean_s (x_is − x̄_i)²  (population variance)

Summed over items, ``noise_share = Σ v_i / Σ mean_s (x_is − h_i)²`` is the share of the judge–human
disagreement of a single call that is the judge's own noise: what averaging many samples would remove.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hcs.agreement.bootstrap import DEFAULT_RESAMPLES, percentile_interval


@dataclass(frozen=True)
class SelfConsistency:
    n_items: int  # items with at least two samples and a human mean
    samples: int  # most samples of any item
    per_item_sd: tuple[float, ...]  # sample standard deviation (ddof = 1) per item, in input order
    mean_sd: float | None
    noise_share: float | None  # Σ v_i / Σ mean squared deviation from the human mean
    noise_share_ci95: tuple[float | None, float | None]  # percentile bootstrap over items


def self_consistency(
    samples, human_mean, *, n_boot: int = DEFAULT_RESAMPLES, seed: int = 0
) -> SelfConsistency:
    """``samples``: items × S values on the rubric scale (NaN where a sample is missing); ``human_mean``: per item.

    Items with fewer than two samples or no human mean are left out.
    """
    x = np.atleast_2d(np.asarray(samples, dtype=float))
    h = np.asarray(human_mean, dtype=float)
    if x.shape[0] != len(h):
        raise ValueError(f"samples has {x.shape[0]} items but human_mean has {len(h)}")
    count = np.sum(np.isfinite(x), axis=1)
    keep = (count >= 2) & np.isfinite(h)
    x, h, count = x[keep], h[keep], count[keep]
    if not len(x):
        return SelfConsistency(0, 0, (), None, None, (None, None))
    mean = np.nanmean(x, axis=1)
    v = np.nanmean((x - mean[:, None]) ** 2, axis=1)
    msd = np.nanmean((x - h[:, None]) ** 2, axis=1)
    sd = np.sqrt(v * count / (count - 1))
    share = float(v.sum() / msd.sum()) if msd.sum() > 0 else None
    ci: tuple[float | None, float | None] = (None, None)
    if share is not None:
        idx = np.random.default_rng(seed).integers(0, len(v), size=(n_boot, len(v)))
        with np.errstate(invalid="ignore", divide="ignore"):
            interval = percentile_interval(v[idx].sum(axis=1) / msd[idx].sum(axis=1))
        ci = interval if interval is not None else (None, None)
    return SelfConsistency(
        n_items=len(x),
        samples=int(count.max()),
        per_item_sd=tuple(float(s) for s in sd),
        mean_sd=float(sd.mean()),
        noise_share=share,
        noise_share_ci95=ci,
    )
