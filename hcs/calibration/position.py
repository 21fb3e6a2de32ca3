"""Position bias of a pairwise judge: the same pair judged in both orders.

A verdict is ``"baseline"`` (the answer shown first won), ``"enhanced"`` (the answer shown second won)
or ``"tie"``, as the G-Eval pairwise template names them. A pair *survives the swap* when the same
response wins in both orders (or both are ties). Zheng et al. (2023, "Judging LLM-as-a-Judge with
MT-Bench and Chatbot Arena", Table 2) found GPT-4 consistent on about 65% of MT-Bench pairs.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from hcs.agreement.bootstrap import DEFAULT_RESAMPLES, percentile_interval
from hcs.calibration.pairwise import OUTCOMES, wilson

FIRST, SECOND, TIE = OUTCOMES


@dataclass(frozen=True)
class PositionProbe:
    n_pairs: int  # pairs judged in both orders
    n_consistent: int
    consistency: float | None  # share of pairs whose verdict survives the swap
    consistency_ci95: tuple[float | None, float | None]  # Wilson
    n_decisive: int  # non-tie verdicts over both orders
    first_preference: float | None  # share of decisive verdicts for the answer shown first
    first_preference_ci95: tuple[float | None, float | None]  # percentile bootstrap over pairs
    consistent_verdicts: tuple[tuple[Hashable, Hashable, str], ...]  # (a, b, outcome) in the first-run order
    n_one_order: int  # pairs judged in one order only (left out)

    def verdict_counts(self) -> dict[str, int]:
        counts = dict.fromkeys(OUTCOMES, 0)
        for _, _, outcome in self.consistent_verdicts:
            counts[outcome] += 1
        return {**counts, "inconsistent": self.n_pairs - self.n_consistent}


def _winner(first: Hashable, second: Hashable, verdict: str) -> Hashable | None:
    if verdict not in OUTCOMES:
        raise ValueError(f"verdict {verdict!r} is not one of {', '.join(OUTCOMES)}")
    return first if verdict == FIRST else second if verdict == SECOND else None


def position_probe(
    verdicts: Sequence[tuple[Hashable, Hashable, str]], *, n_boot: int = DEFAULT_RESAMPLES, seed: int = 0
) -> PositionProbe:
    """Consistency under the swap and preference for the first position.

    ``verdicts``: (response shown first, response shown second, verdict), in the order they were run;
    the first verdict of a pair fixes the orientation its consistent verdict is reported in. Each
    ordered pair may appear once.
    """
    by_pair: dict[frozenset, dict[tuple, str]] = {}
    for first, second, verdict in verdicts:
        _winner(first, second, verdict)
        if first == second:
            raise ValueError(f"a pair needs two different responses, not {first!r} twice")
        orders = by_pair.setdefault(frozenset((first, second)), {})
        if (first, second) in orders:
            raise ValueError(f"the pair {first!r} first, {second!r} second appears twice")
        orders[(first, second)] = verdict
    consistent, firsts, decisive = [], [], []
    one_order = 0
    for orders in by_pair.values():
        if len(orders) < 2:
            one_order += 1
            continue
        (a, b), v1 = next(iter(orders.items()))
        v2 = orders[(b, a)]
        if _winner(a, b, v1) == _winner(b, a, v2):
            consistent.append((a, b, v1))
        firsts.append((v1 == FIRST) + (v2 == FIRST))
        decisive.append((v1 != TIE) + (v2 != TIE))
    n_pairs, n_decisive = len(firsts), int(sum(decisive))
    f, d = np.asarray(firsts, dtype=float), np.asarray(decisive, dtype=float)
    ci: tuple[float | None, float | None] = (None, None)
    if n_decisive:
        idx = np.random.default_rng(seed).integers(0, n_pairs, size=(n_boot, n_pairs))
        with np.errstate(invalid="ignore", divide="ignore"):
            interval = percentile_interval(f[idx].sum(axis=1) / d[idx].sum(axis=1))
        ci = interval if interval is not None else (None, None)
    return PositionProbe(
        n_pairs=n_pairs,
        n_consistent=len(consistent),
        consistency=len(consistent) / n_pairs if n_pairs else None,
        consistency_ci95=wilson(len(consistent), n_pairs),
        n_decisive=n_decisive,
        first_preference=float(f.sum() / n_decisive) if n_decisive else None,
        first_preference_ci95=ci,
        consistent_verdicts=tuple(consistent),
        n_one_order=one_order,
    )
