"""The report as JSON: one function assembles it (schema documented in README.md).

Undefined values are ``null``; ``json.dumps(..., allow_nan=False)`` guarantees no NaN.
"""

from __future__ import annotations

import json
from dataclasses import asdict, is_dataclass
from typing import Any

from annotator.reports.exports.methods import methods_paragraph
from annotator.reports.selectors.annotation_facts import annotation_facts
from annotator.reports.selectors.batch_report import BatchReport
from annotator.reports.selectors.sections import REPORT_SECTIONS
from annotator.reports.statistics import json_values
from hcs.numbers import finite_or_none

SCHEMA_VERSION = 1


def _ci(ci: tuple[float, float] | None) -> list[float] | None:
    return None if ci is None else [finite_or_none(ci[0]), finite_or_none(ci[1])]


def clean(value: Any) -> Any:
    """Dataclasses, tuples and dicts to plain JSON values, non-finite floats to null."""
    if hasattr(value, "to_json"):  # a report section's own JSON shape comes first
        return clean(value.to_json())
    if is_dataclass(value) and not isinstance(value, type):
        return clean(asdict(value))
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    if isinstance(value, float):
        return finite_or_none(value)
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return clean(value.item())
    return value


def _dimensions(rows, levels: list[str]) -> dict[str, Any]:
    """Per dimension: its label, the statistics of ``AGREEMENT_STATISTICS`` and the counts, the
    distribution of its ratings."""
    return {
        row.key: {
            "label": row.label,
            **json_values(row.agreement),
            "distribution": dict(zip(levels, row.agreement.distribution)),
        }
        for row in rows
    }


def _annotator_quality(report: BatchReport, name: str) -> dict[str, Any]:
    """The quality-control keys of one ``annotators`` entry."""
    s = report.quality.annotators.get(name) if report.quality is not None else None
    if s is None:
        return {
            "gold_accuracy": None,
            "checks_passed": 0,
            "checks_failed": 0,
            "excluded": False,
            "exclusion_reason": None,
            "median_seconds": None,
            "straightlining": None,
        }
    return {
        "gold_accuracy": s.gold_accuracy,
        "checks_passed": s.checks_passed,
        "checks_failed": s.checks_failed,
        "excluded": s.excluded,
        "exclusion_reason": s.exclusion_reason or None,
        "median_seconds": s.median_seconds,
        "straightlining": s.straightlining,
        "longest_identical_run": s.longest_run,
        "share_under_min_seconds": s.fast_share,
        "loo_spearman": s.loo_spearman,
        "edits": s.edits,
        "skips": s.skips,
        "blocked": s.blocked,
        "warned": s.warned,
        "training": s.training or None,
        "adjudication_agreement": {"n": s.adjudicated[0], "exact": s.adjudicated[1], "mae": s.adjudicated[2]},
        "flags": {
            sig.name: {
                "value": sig.value,
                "threshold": sig.threshold,
                "rule": sig.rule,
                "flagged": sig.flagged,
            }
            for sig in s.signals
        },
    }


def _quality_keys(report: BatchReport, levels: list[str], dimensions: dict[str, Any]) -> dict[str, Any]:
    quality = report.quality
    if quality is None:
        return {
            "exclusions": [],
            "dimensions_all_annotators": dimensions,
            "agreement_over_time": None,
            "adjudications": [],
        }
    return {
        "exclusions": [
            {
                "annotator": e.annotator,
                "rule": e.rule,
                "reason": e.reason,
                "excluded_at": e.excluded_at.isoformat() if e.excluded_at else None,
            }
            for e in quality.exclusions
        ],
        "dimensions_all_annotators": _dimensions(quality.dimensions_all, levels),
        "agreement_over_time": quality.over_time.to_json() if quality.over_time is not None else None,
        "adjudications": [
            {
                "item_id": a.item.item_id,
                "system_id": a.item.system_id,
                "scores": a.scores,
                "flags": a.flags,
                "overall_hcs": report.rubric.overall(a.scores),
                "note": a.note,
                "adjudicator": a.adjudicator.get_username(),
                "at": a.updated_at.isoformat(),
            }
            for a in quality.adjudications
        ],
    }


def report_to_dict(report: BatchReport) -> dict[str, Any]:
    levels = [str(v) for v in report.categories]
    dimensions = _dimensions(report.dimensions, levels)
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
        "methods": methods_paragraph(report),
        "overall_hcs": {
            "mean": finite_or_none(report.overall_mean),
            "n_items": report.overall_n_items,
            "weights": report.rubric.weights,
            "by_system": {
                s.system: {
                    "rank": s.rank,
                    "mean": finite_or_none(s.mean),
                    "ci95": _ci(s.ci95),
                    "n_items": s.n_items,
                }
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
                "n_shared": a.n_shared,
                "outlier": a.outlier,
                "reasons": list(a.reasons),
                **_annotator_quality(report, a.annotator),
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
    data.update(_quality_keys(report, levels, dimensions))
    data.update(annotation_facts(batch_id=report.batch_id, rubric=report.rubric))
    for name in REPORT_SECTIONS:  # every listed section's key, null when the report was built without it
        data[name] = report.sections.get(name)
    return clean(data)


def report_json(report: BatchReport) -> str:
    return json.dumps(report_to_dict(report), indent=2, ensure_ascii=False, allow_nan=False)
