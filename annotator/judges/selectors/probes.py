"""Bias probes for the judges section: database rows → ``hcs.calibration.probes`` → JSON-ready results.

Called by :func:`annotator.judges.selectors.judges.judges_report` for every judge × dimension, on the same
items and human ratings the calibration uses, so the probes and the correlations describe one sample.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db.models.functions import Length

from annotator.judges.selectors.verdicts import counted_verdicts
from annotator.models import Batch, Item, JudgeCall
from hcs.calibration.metrics import N_BOOT
from hcs.calibration.pairwise import (
    PairwiseComparison,
    compare_verdicts,
    human_preference,
)
from hcs.calibration.position import PositionProbe, position_probe
from hcs.calibration.probes import (
    FEW_LEVELS,
    Coefficient,
    LengthBias,
    ScoreUse,
    length_bias,
    score_use,
)
from hcs.calibration.self_consistency import SelfConsistency, self_consistency


def _r(value: float | None) -> float | None:
    """A statistic as a plain float at full precision (machine-readable exports never round; pages do)."""
    return None if value is None else float(value)


def _pair(ci) -> list[float | None]:
    return [_r(ci[0]), _r(ci[1])]


def item_lengths(batch: Batch) -> dict[int, int]:
    """Item pk → length of its response in characters (counted by the database)."""
    return dict(Item.objects.filter(batch=batch).annotate(n=Length("response")).values_list("pk", "n"))


@dataclass(frozen=True)
class DimensionProbes:
    length_bias: LengthBias | None  # None when a response is empty (no log length)
    score_use: ScoreUse
    self_consistency: SelfConsistency | None = None  # only for a judge run with --samples
    consistency_items: tuple[str, ...] = ()  # item ids of self_consistency.per_item_sd

    def to_json(self) -> dict[str, Any]:
        out = {"length_bias": length_bias_json(self.length_bias), "score_use": score_use_json(self.score_use)}
        c = self.self_consistency
        if c is not None:
            out["self_consistency"] = {
                "n_items": c.n_items,
                "samples": c.samples,
                "mean_sd": _r(c.mean_sd),
                "noise_share": _r(c.noise_share),
                "noise_share_ci95": _pair(c.noise_share_ci95),
                "per_item_sd": {i: _r(sd) for i, sd in zip(self.consistency_items, c.per_item_sd)},
            }
        return out


def _coef_json(c: Coefficient) -> dict[str, Any]:
    return {"value": _r(c.value), "ci95": _pair(c.ci95), "p_value": _r(c.p_value)}


def length_bias_json(probe: LengthBias | None) -> dict[str, Any] | None:
    if probe is None:
        return None
    coef = _coef_json(probe.coef)
    return {
        "n": probe.n,
        "spearman": _r(probe.spearman),
        "ci95": _pair(probe.ci95),
        "coef": coef["value"],
        "coef_ci95": coef["ci95"],
        "coef_p_value": coef["p_value"],
        "coef_per_1000_chars": _coef_json(probe.coef_per_1000_chars),
        "human_spearman": _r(probe.human_spearman),
        "human_ci95": _pair(probe.human_ci95),
    }


def score_use_json(use: ScoreUse) -> dict[str, Any]:
    levels = [str(level) for level in use.levels]
    return {
        "levels_used": use.levels_used,
        "levels": len(use.levels),
        "human_levels_used": use.human_levels_used,
        "few_levels": use.few_levels,
        "few_levels_threshold": FEW_LEVELS,
        "judge_distribution": dict(zip(levels, use.judge_counts)),
        "human_distribution": dict(zip(levels, use.human_counts)),
    }


def dimension_probes(
    human: Mapping[Hashable, Mapping[Hashable, float]],
    judge: Mapping[Hashable, float],
    lengths: Mapping[Hashable, int],
    *,
    scale: tuple[int, int],
    samples: Mapping[Hashable, Mapping[int, float]] | None = None,
    item_ids: Sequence[str] = (),
    n_boot: int = N_BOOT,
    seed: int = 0,
) -> DimensionProbes:
    """Length bias and score use over the items people and the judge both scored (as ``calibrate_judge``)."""
    items = [i for i in human if i in judge and judge[i] is not None and len(human[i]) > 0]
    judge_values = [float(judge[i]) for i in items]
    human_mean = [statistics.fmean(human[i].values()) for i in items]
    item_len = [lengths[i] for i in items]
    bias = None
    if items and min(item_len) > 0:
        bias = length_bias(item_len, judge_values, human_mean, n_boot=n_boot, seed=seed)
    ratings = [v for i in items for v in human[i].values()]
    consistency, consistency_items = None, ()
    if samples:
        sampled = [i for i in items if len(samples.get(i, {})) >= 2]
        width = max((max(samples[i]) + 1 for i in sampled), default=0)
        matrix = np.full((len(sampled), width), np.nan)
        for row, i in enumerate(sampled):
            for n, value in samples[i].items():
                matrix[row, n] = value
        consistency = self_consistency(
            matrix, [statistics.fmean(human[i].values()) for i in sampled], n_boot=n_boot, seed=seed
        )
        consistency_items = tuple(item_ids[i] for i in sampled)
    return DimensionProbes(
        length_bias=bias,
        score_use=score_use(judge_values, ratings, scale=scale),
        self_consistency=consistency,
        consistency_items=consistency_items,
    )


def judge_samples(batch: Batch) -> dict[tuple[int, str], dict[int, dict[int, float]]]:
    """(judge pk, dimension) → {item pk: {sample: value}} for the judges run with ``--samples``."""
    judges = JudgeCall.objects.filter(item__batch=batch, sample__gt=0).values("judge").distinct()
    out: dict[tuple[int, str], dict[int, dict[int, float]]] = {}
    for judge, item, sample, parsed in JudgeCall.objects.filter(
        item__batch=batch, judge__in=judges, enhanced__isnull=True, status=JudgeCall.OK
    ).values_list("judge", "item", "sample", "parsed"):
        for dimension, score in parsed.get("scores", {}).items():
            out.setdefault((judge, dimension), {}).setdefault(item, {})[sample] = float(score["value"])
    return out


@dataclass(frozen=True)
class PositionResult:
    """The position-swap probe of one pairwise judge, and its consistent verdicts against people."""

    judge_pk: int
    probe: PositionProbe
    human: PairwiseComparison | None  # consistent verdicts vs the human preference (pairs people rated)
    human_ci95: tuple[float | None, float | None]  # Wilson interval of that agreement

    def to_json(self) -> dict[str, Any]:
        p = self.probe
        out: dict[str, Any] = {
            "n_pairs": p.n_pairs,
            "n_pairs_one_order": p.n_one_order,
            "consistency": _r(p.consistency),
            "consistency_ci95": _pair(p.consistency_ci95),
            "n_decisive": p.n_decisive,
            "first_preference": _r(p.first_preference),
            "first_preference_ci95": _pair(p.first_preference_ci95),
            "consistent_verdicts": p.verdict_counts(),
            "consistent_vs_humans": None,
        }
        if self.human is not None:
            out["consistent_vs_humans"] = {
                "n": self.human.n,
                "agreement": _r(self.human.agreement),
                "agreement_ci95": _pair(self.human_ci95),
                "kappa": _r(self.human.kappa),
            }
        return out


def position_results(
    batch: Batch, item_mean: Mapping[int, float], *, n_boot: int = N_BOOT, seed: int = 0
) -> dict[str, PositionResult]:
    """Judge name → position probe, for every pairwise judge with a pair judged in both orders.

    ``item_mean``: item pk → mean overall HCS of the people who rated it (NaN when nobody has).
    """
    verdicts: dict[str, list[tuple[int, int, str]]] = {}
    pks: dict[str, int] = {}
    for judge, pk, first, second, winner in (
        # The run's own order first: a pair's first verdict fixes the orientation its outcome is given in.
        counted_verdicts(batch=batch)
        .order_by("judge__name", "swapped", "id")
        .values_list("judge__name", "judge", "baseline", "enhanced", "winner")
    ):
        verdicts.setdefault(judge, []).append((first, second, winner))
        pks[judge] = pk
    results = {}
    for judge, rows in verdicts.items():
        probe = position_probe(rows, n_boot=n_boot, seed=seed)
        if probe.n_pairs == 0:
            continue
        rated = [
            (a, b, v)
            for a, b, v in probe.consistent_verdicts
            if math.isfinite(item_mean.get(a, math.nan)) and math.isfinite(item_mean.get(b, math.nan))
        ]
        human, ci = None, (None, None)
        if rated:
            human = compare_verdicts(
                [v for _, _, v in rated], [human_preference(item_mean[a], item_mean[b]) for a, b, _ in rated]
            )
            ci = human.agreement_ci95
        results[judge] = PositionResult(pks[judge], probe, human, ci)
    return results
