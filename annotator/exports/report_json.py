"""The report as JSON: one function assembles it (schema documented in README.md).

Undefined values are ``null``; ``json.dumps(..., allow_nan=False)`` guarantees no NaN.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, is_dataclass
from typing import Any

from annotator.selectors.reports import BatchReport

SCHEMA_VERSION = 1


def _num(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _ci(ci: tuple[float, float] | None) -> list[float] | None:
    return None if ci is None else [_num(ci[0]), _num(ci[1])]


def _clean(value: Any) -> Any:
    """Dataclasses, tuples and dicts to plain JSON values, non-finite floats to null."""
    if hasattr(value, "to_json"):  # a report section's own JSON shape comes first
        return _clean(value.to_json())
    if is_dataclass(value) and not isinstance(value, type):
        return _clean(asdict(value))
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, float):
        return _num(value)
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return _clean(value.item())
    return value


def report_to_dict(report: BatchReport) -> dict[str, Any]:
    levels = [str(v) for v in report.categories]
    dimensions = {}
    for row in report.dimensions:
        a = row.agreement
        dimensions[row.key] = {
            "label": row.label,
            "fleiss_kappa": _num(a.fleiss_kappa),
            "fleiss_kappa_ci95": _ci(a.fleiss_kappa_ci95),
            "fleiss_kappa_label": a.fleiss_label or None,
            "fleiss_items_used": a.fleiss_items_used,
            "fleiss_items_left_out": a.fleiss_items_left_out,
            "krippendorff_alpha_ordinal": _num(a.alpha_ordinal),
            "krippendorff_alpha_ordinal_ci95": _ci(a.alpha_ordinal_ci95),
            "krippendorff_alpha_interval": _num(a.alpha_interval),
            "krippendorff_alpha_interval_ci95": _ci(a.alpha_interval_ci95),
            "gwet_ac2": _num(a.gwet_ac2),
            "gwet_ac2_ci95": _ci(a.gwet_ac2_ci95),
            "percent_agreement": _num(a.percent_agreement),
            "percent_agreement_within_1": _num(a.percent_within_one),
            "n_items": a.n_items,
            "n_items_pairable": a.n_items_pairable,
            "n_ratings": a.n_ratings,
            "distribution": dict(zip(levels, a.distribution)),
        }
    data: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "batch": report.batch_name,
        "k": report.k,
        "rubric": {"name": report.rubric.name, "version": report.rubric.version},
        "n_items": report.n_items,
        "n_items_rated": report.n_items_rated,
        "n_annotations": report.n_annotations,
        "bootstrap": {"resamples": report.n_resamples, "seed": report.seed, "level": 0.95},
        "dimensions": dimensions,
        "overall_hcs": {
            "mean": _num(report.overall_mean),
            "n_items": report.overall_n_items,
            "weights": report.rubric.weights,
            "by_system": {
                s.system: {"rank": s.rank, "mean": _num(s.mean), "ci95": _ci(s.ci95), "n_items": s.n_items}
                for s in report.systems
            },
        },
        "annotators": [
            {
                "annotator": a.annotator,
                "n_items": a.n_items,
                "mean": a.mean,
                "bias": a.bias,
                "spearman_loo": a.spearman_loo,
                "outlier": a.outlier,
                "reasons": list(a.reasons),
            }
            for a in report.annotators
        ],
        "disagreements": [
            {
                "item_id": d.item_id,
                "system_id": d.system_id,
                "dimension": d.dimension,
                "spread": d.spread,
                "sd": d.sd,
                "distribution": dict(zip(levels, d.distribution)),
            }
            for d in report.disagreements
        ],
    }
    for name, section in report.sections.items():
        data[name] = section
    return _clean(data)


def report_json(report: BatchReport) -> str:
    return json.dumps(report_to_dict(report), indent=2, ensure_ascii=False, allow_nan=False)
