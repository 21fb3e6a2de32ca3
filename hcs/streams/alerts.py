"""Change alerts for a judged stream, valid when checked after every window.

Three detectors per dimension, each on a per-item statistic in [0, 1] of the human-labelled traces:

- ``judge_drift`` (one per judge): the item's quadratic agreement between the judge and the human mean,
  ``1 − (judge − human mean)² / (hi − lo)²``; alarm when its mean falls. It is the per-item term of the
  quadratic-weighted κ's observed disagreement, so a fall in QWK with the same spread of scores is a
  fall in this mean.
- ``product_change``: the human mean rescaled to [0, 1], ``(human mean − lo) / (hi − lo)``; alarm when it
  moves either way. A judge that follows the change keeps its per-item agreement, so only this
  detector fires; a judge that misses it loses agreement and ``judge_drift`` fires as well.
- ``rater_drift``: the item's agreement among people, ``1 − mean over pairs of (x_a − x_b)² / (hi − lo)²``
  (interval Krippendorff α's observed disagreement on the item); alarm when its mean falls.

The test (:func:`detect_changes`), in two steps after each restart:

1. Reference. The first ``reference_windows`` windows give a one-sided (1 − α/2) confidence bound on the
   statistic's mean by betting (:func:`hcs.streams.betting.lower_bound`, Waudby-Smith and Ramdas 2024).
2. Monitoring. Every later item i pays ``1 + λ (bound − x_i)`` (a fall; ``1 + λ (x_i − bound)`` for a
   rise): while nothing has changed its conditional mean is ≤ 1, so the product over any run of windows
   is an e-process. The e-detector is the Shiryaev–Roberts one of Shin, Ramdas and Rinaldo (2024),
   ``R_t = (1 + R_{t−1}) · E_t`` with ``E_t`` the window's product, mixed over a fixed grid of bets λ
   (scaled by the reference's spread, so chosen before monitoring). It alarms when ``R_t ≥ horizon / (α/2)``.

Guarantee. If nothing changes for ``horizon`` windows after the reference, P(an alarm in those windows)
≤ α: the bound is wrong with probability ≤ α/2; when it is right, ``R_t − t`` is a supermartingale
(E[R_t | past] ≤ R_{t−1} + 1), so ``R_t + (horizon − t)`` is a nonnegative supermartingale starting at ``horizon`` and
Ville's inequality gives P(max_{t ≤ horizon} R_t ≥ horizon/(α/2)) ≤ α/2. Beyond the horizon, when the
bound holds, the e-detector guarantee of Shin et al. (2024) remains: the expected number of windows to a
false alarm is at least the threshold. A two-sided detector splits α between its directions. After an
alarm the detector restarts: the next ``reference_windows`` windows are the new reference, so one
change raises one alert.

References
----------
.. [1] J. Shin, A. Ramdas and A. Rinaldo, "E-detectors: a nonparametric framework for sequential change
   detection", *New England Journal of Statistics in Data Science* 2(2):229–260, 2024 (arXiv:2203.03532).
.. [2] I. Waudby-Smith and A. Ramdas, "Estimating means of bounded random variables by betting",
   *Journal of the Royal Statistical Society Series B* 86(1):1–27, 2024.
.. [3] J. Ville, *Étude critique de la notion de collectif*, Gauthier-Villars, 1939.
.. [4] S. W. Roberts, "A comparison of some control chart procedures", *Technometrics* 8(3):411–430, 1966.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from hcs.streams.betting import TRUNCATION, lower_bound, upper_bound

KINDS = ("judge_drift", "product_change", "rater_drift")
DEFAULT_ALPHA = 0.05
DEFAULT_HORIZON = 90  # windows the false-alarm bound covers (90 daily windows)
DEFAULT_REFERENCE_WINDOWS = 14
# The mixture's bets, as shifts of the mean in reference standard deviations: λ = shift / sd is about the
# Kelly bet against a fall of shift · sd. From a twentieth of a standard deviation to most of one.
BET_SHIFTS = (0.05, 0.1, 0.2, 0.4, 0.8)
MIN_SD = 1e-3


@dataclass(frozen=True)
class Detection:
    """One alarm of :func:`detect_changes`: where, from when, and on what evidence.

    ``statistic`` is the Shiryaev–Roberts e-detector at the alarm (alarm when ≥ ``threshold``);
    ``e_value`` the e-CUSUM value, the largest mixture e-value over the possible start windows, reached
    from ``since`` (the changepoint estimate). ``bound`` is the reference's confidence bound the bets were
    placed against; ``before`` the reference mean and ``after`` the mean from ``since`` to the alarm."""

    detected_at: int  # window index
    since: int  # first window of the change (estimate)
    direction: str  # "down" or "up"
    statistic: float
    threshold: float
    e_value: float
    reference: tuple[int, int]  # first and last window of the reference
    bound: float
    before: float
    after: float


@dataclass(frozen=True)
class Alert:
    kind: str  # one of KINDS
    judge: str | None  # None for product_change and rater_drift (about people, not a judge)
    dimension: str
    detection: Detection

    @property
    def detected_at(self) -> int:
        return self.detection.detected_at

    @property
    def since(self) -> int:
        return self.detection.since


def _logmeanexp(a: np.ndarray, axis: int = 0) -> np.ndarray:
    top = np.max(a, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return np.squeeze(top, axis=axis) + np.log(np.mean(np.exp(a - top), axis=axis))


class _OneSided:
    """The bets and the SR recursion of one direction, for one reference."""

    def __init__(self, reference: np.ndarray, direction: str, alpha_ref: float, bet_shifts: Sequence[float]):
        self.direction = direction
        sd = max(float(np.std(reference)), MIN_SD)
        if direction == "down":
            self.bound = lower_bound(reference, alpha_ref)
            room = 1.0 - self.bound  # an item can pay at most λ · (1 − bound): keep the factor ≥ 1/2
        else:
            self.bound = upper_bound(reference, alpha_ref)
            room = self.bound
        cap = TRUNCATION / room if room > 0 else math.inf
        self.lam = np.minimum(np.asarray(bet_shifts, dtype=float) / sd, cap)
        self.log_r = np.full(len(self.lam), -np.inf)
        self.log_e: list[np.ndarray] = []

    def update(self, x: np.ndarray) -> float:
        gain = (self.bound - x) if self.direction == "down" else (x - self.bound)
        log_e = np.log1p(np.outer(self.lam, gain)).sum(axis=1)
        self.log_e.append(log_e)
        self.log_r = np.logaddexp(0.0, self.log_r) + log_e
        return float(_logmeanexp(self.log_r))

    def start_estimate(self) -> tuple[int, float]:
        """The start (offset into the monitored windows) with the largest mixture e-value, and its log."""
        e = np.array(self.log_e)  # windows × bets
        from_start = np.cumsum(e[::-1], axis=0)[::-1]  # row j: Σ_{s ≥ j} log E_s
        mixed = _logmeanexp(from_start, axis=1)
        j = int(np.argmax(mixed))
        return j, float(mixed[j])


def detect_changes(
    windows: Sequence,
    *,
    direction: str = "down",
    alpha: float = DEFAULT_ALPHA,
    horizon: int = DEFAULT_HORIZON,
    reference_windows: int = DEFAULT_REFERENCE_WINDOWS,
    bet_shifts: Sequence[float] = BET_SHIFTS,
) -> tuple[Detection, ...]:
    """Sequential change detection on the mean of a [0, 1] statistic, checked after every window.

    Parameters
    ----------
    windows : sequence of array_like
        The per-item statistic of each window's labelled items, in [0, 1], windows in time order. A window
        without items (nobody labelled its traces) is skipped: it is not one of the reference windows, is
        not checked, and does not count towards the horizon.
    direction : {"down", "up", "both"}
        The change to detect: a fall of the mean, a rise, or either.
    alpha : float
        P(any false alarm within ``horizon`` windows after a reference) ≤ ``alpha``.
    horizon : int
        Windows the bound covers; the threshold is ``horizon / (α/2)`` (per direction: α/4 each when both).
    reference_windows : int
        Windows that set the reference at the start and after each alarm.
    bet_shifts : sequence of float
        The mixture's bets, as shifts of the mean in reference standard deviations.

    Returns
    -------
    tuple of Detection
        Every alarm, in time order. The detector looks only at windows up to each alarm, so running it
        on a longer history gives the same earlier alarms.

    References
    ----------
    Shin, Ramdas and Rinaldo (2024) for e-detectors and the SR e-detector; Waudby-Smith and Ramdas
    (2024) for the reference bound; Ville (1939) for the maximal inequality.

    Examples
    --------
    A statistic at 0.8 for 20 windows of 40 items, then at 0.6: one alarm, on the change's first window.

    >>> rng = np.random.default_rng(0)
    >>> days = [rng.uniform(0.6, 1.0, 40) for _ in range(20)] + [rng.uniform(0.4, 0.8, 40) for _ in range(20)]
    >>> [(d.since, d.detected_at) for d in detect_changes(days)]
    [(20, 20)]
    """
    data = _checked(windows, direction, alpha, horizon, reference_windows)
    # Windows without a labelled item carry no evidence: they are neither reference windows nor checked
    # (an SR step on nothing would still add a start). Indices are the caller's windows again at the end.
    kept = [i for i, w in enumerate(data) if w.size]
    found = _detect([data[i] for i in kept], direction, alpha, horizon, reference_windows, bet_shifts)
    return tuple(
        replace(
            d,
            detected_at=kept[d.detected_at],
            since=kept[d.since],
            reference=(kept[d.reference[0]], kept[d.reference[1]]),
        )
        for d in found
    )


def _detect(data, direction, alpha, horizon, reference_windows, bet_shifts) -> list[Detection]:
    """:func:`detect_changes` on windows that all hold items (indices into ``data``)."""
    sides = ("down", "up") if direction == "both" else (direction,)
    # Half of α for the reference bounds, half for the detectors, each shared between the directions.
    alpha_side = alpha / 2 / len(sides)
    threshold = horizon / alpha_side
    log_threshold = math.log(threshold)

    found: list[Detection] = []
    start = 0
    while start + reference_windows < len(data):
        ref_end = start + reference_windows  # first monitored window
        reference = np.concatenate(data[start:ref_end])
        if reference.size < 2:
            start += 1  # too little to set a reference: slide it forward
            continue
        detectors = [_OneSided(reference, side, alpha_side, bet_shifts) for side in sides]
        alarm = None
        for t in range(ref_end, len(data)):
            for det in detectors:
                if det.update(data[t]) >= log_threshold and alarm is None:
                    alarm = (t, det)
            if alarm is not None:
                break
        if alarm is None:
            break
        t, det = alarm
        found.append(_detection(data, det, t, (start, ref_end), reference, threshold))
        start = t + 1
    return found


def _checked(windows, direction: str, alpha: float, horizon: int, reference_windows: int) -> list:
    """The windows as arrays of their finite values, after checking the arguments and the [0, 1] range."""
    if direction not in ("down", "up", "both"):
        raise ValueError(f"direction must be 'down', 'up' or 'both', not {direction!r}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), not {alpha}")
    if reference_windows < 1 or horizon < 1:
        raise ValueError("reference_windows and horizon must be at least 1")
    # Non-finite values (a trace the judge did not score) are dropped first: a window of only those is empty.
    data = [np.asarray(w, dtype=float).ravel() for w in windows]
    data = [w[np.isfinite(w)] for w in data]
    for w in data:
        if w.size and (w.min() < 0 or w.max() > 1):
            raise ValueError("the statistic must lie in [0, 1]")
    return data


def _detection(data, det, t: int, reference_span: tuple[int, int], reference, threshold: float) -> Detection:
    """The alarm a one-sided detector raised at window ``t``, with its estimated start and evidence."""
    start, ref_end = reference_span
    offset, log_e = det.start_estimate()
    since = ref_end + offset
    after = np.concatenate(data[since : t + 1])
    return Detection(
        detected_at=t,
        since=since,
        direction=det.direction,
        statistic=float(math.exp(min(_logmeanexp(det.log_r), 700.0))),
        threshold=threshold,
        e_value=float(math.exp(min(log_e, 700.0))),
        reference=(start, ref_end - 1),
        bound=det.bound,
        before=float(reference.mean()),
        after=float(after.mean()) if after.size else math.nan,
    )


def _span(scale: tuple[int, int]) -> float:
    lo, hi = scale
    if hi <= lo:
        raise ValueError(f"scale must run from low to high, not {scale}")
    return float(hi - lo)


def item_agreement(judge, human, scale: tuple[int, int] = (1, 5)) -> np.ndarray:
    """Per item, ``1 − (judge − human mean)² / (hi − lo)²`` in [0, 1]; items nobody rated are dropped.

    >>> item_agreement([3, 5], [[3, 4, np.nan], [1, 1, 1]]).tolist()
    [0.984375, 0.0]
    """
    human = np.asarray(human, dtype=float)
    judge = np.asarray(judge, dtype=float)
    rated = np.isfinite(human).any(axis=1)
    mean = np.nanmean(human[rated], axis=1)
    return 1.0 - (judge[rated] - mean) ** 2 / _span(scale) ** 2


def item_level(human, scale: tuple[int, int] = (1, 5)) -> np.ndarray:
    """Per item, the human mean rescaled to [0, 1]: ``(mean − lo) / (hi − lo)``.

    >>> item_level([[3, 4, np.nan], [1, 1, 1]]).tolist()
    [0.625, 0.0]
    """
    human = np.asarray(human, dtype=float)
    rated = np.isfinite(human).any(axis=1)
    return (np.nanmean(human[rated], axis=1) - scale[0]) / _span(scale)


def item_rater_agreement(human, scale: tuple[int, int] = (1, 5)) -> np.ndarray:
    """Per item rated at least twice, ``1 − mean over rater pairs of (x_a − x_b)² / (hi − lo)²``.

    >>> item_rater_agreement([[3, 4, np.nan], [1, 5, 1], [2, np.nan, np.nan]]).round(4).tolist()
    [0.9375, 0.3333]
    """
    human = np.asarray(human, dtype=float)
    n = np.isfinite(human).sum(axis=1)
    keep = n >= 2
    x = np.where(np.isfinite(human[keep]), human[keep], 0.0)
    n = n[keep]
    # Σ_{a<b} (x_a − x_b)² = n Σ x² − (Σ x)²
    pair_sum = n * (x**2).sum(axis=1) - x.sum(axis=1) ** 2
    pairs = n * (n - 1) / 2
    return 1.0 - pair_sum / pairs / _span(scale) ** 2


def stream_alerts(
    human: Sequence,
    judges: Mapping[str, Sequence],
    *,
    dimension: str,
    scale: tuple[int, int] = (1, 5),
    alpha: float = DEFAULT_ALPHA,
    horizon: int = DEFAULT_HORIZON,
    reference_windows: int = DEFAULT_REFERENCE_WINDOWS,
) -> tuple[Alert, ...]:
    """Every alert on one dimension of a stream: judge drift per judge, product change, rater drift.

    Parameters
    ----------
    human : sequence of array_like
        Per window, the human-labelled traces' scores, items × raters (NaN where a rater did not rate).
    judges : mapping of str to sequence of array_like
        Per judge, per window, its scores on the same labelled traces in the same order.
    dimension : str
        The dimension's key, copied into the alerts.
    scale : tuple of int
        Lowest and highest score.
    alpha, horizon, reference_windows
        As in :func:`detect_changes`; each detector has its own α (the bound is per detector).

    Returns
    -------
    tuple of Alert
        In order of detection.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> quality = [rng.normal(3.2 - 0.6 * (t >= 20), 1, 50) for t in range(40)]
    >>> human = [np.clip(np.round(q[:, None] + rng.normal(0, 0.6, (50, 3))), 1, 5) for q in quality]
    >>> judge = [np.clip(np.round(q + rng.normal(0, 0.6, 50)), 1, 5) for q in quality]
    >>> [(a.kind, a.since) for a in stream_alerts(human, {"j": judge}, dimension="helpful")]
    [('product_change', 20)]
    """
    human = [np.asarray(h, dtype=float) for h in human]
    options = dict(alpha=alpha, horizon=horizon, reference_windows=reference_windows)
    alerts = []
    for name, scores in judges.items():
        if len(scores) != len(human):
            raise ValueError(f"judge {name!r} has {len(scores)} windows, the people {len(human)}")
        stat = [item_agreement(j, h, scale) for j, h in zip(scores, human)]
        alerts += [
            Alert("judge_drift", name, dimension, d)
            for d in detect_changes(stat, direction="down", **options)
        ]
    level = [item_level(h, scale) for h in human]
    alerts += [
        Alert("product_change", None, dimension, d)
        for d in detect_changes(level, direction="both", **options)
    ]
    raters = [item_rater_agreement(h, scale) for h in human]
    alerts += [
        Alert("rater_drift", None, dimension, d) for d in detect_changes(raters, direction="down", **options)
    ]
    return tuple(sorted(alerts, key=lambda a: (a.detected_at, KINDS.index(a.kind), a.judge or "")))
