"""A batch's report: the arrays from :mod:`annotator.reports.selectors.arrays` → ``hcs`` statistics.

Views, exports, the background job and the ``export_report`` command all call :func:`batch_report`;
its further sections (judge calibration, pairwise verdicts) are those ``REPORT_SECTIONS`` lists
(:mod:`annotator.reports.selectors.sections`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from annotator.models import Batch
from annotator.quality.selectors import report_section as quality_report
from annotator.reports.selectors.arrays import ReportArrays, report_arrays
from annotator.reports.selectors.sections import SectionInputs, report_sections
from hcs.agreement import DimensionAgreement, dimension_agreement
from hcs.agreement.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED
from hcs.calibration.alt_test import DEFAULT_EPSILON
from hcs.numbers import finite_or_none
from hcs.rubric import Rubric
from hcs.scoring import (
    AnnotatorQuality,
    SystemScore,
    annotator_quality,
    item_summaries,
    overall_per_annotation,
    rank_systems,
    widest_spread,
)

__all__ = [
    "BatchReport",
    "ReportArrays",
    "batch_report",
    "batch_report_computed",
    "report_arrays",
    "report_from_arrays",
    "sections_from_arrays",
]

DISAGREEMENTS_PER_DIMENSION = 10


# ------------------------------------------------------------------ the report
@dataclass(frozen=True)
class DimensionRow:
    key: str
    label: str
    agreement: DimensionAgreement


@dataclass(frozen=True)
class DisagreementRow:
    item_pk: int
    item_id: str
    system_id: str
    dimension: str
    dimension_label: str
    spread: int
    sd: float
    distribution: tuple[int, ...]


@dataclass(frozen=True, eq=False)
class ItemOverall:
    """Per item: the mean overall HCS over its annotators and the spread (sample SD)."""

    item_id: list[str]
    system_id: list[str]
    n: np.ndarray  # complete annotations (every dimension rated)
    mean: np.ndarray  # NaN when none
    sd: np.ndarray  # NaN when fewer than two

    def rows(self) -> Iterator[tuple[str, str, int, float | None, float | None]]:
        for i, item_id in enumerate(self.item_id):
            yield (
                item_id,
                self.system_id[i],
                int(self.n[i]),
                finite_or_none(self.mean[i]),
                finite_or_none(self.sd[i]),
            )


@dataclass(frozen=True)
class BatchReport:
    batch_id: int
    batch_name: str
    k: int
    rubric: Rubric
    n_items: int
    n_items_rated: int
    n_annotations: int
    dimensions: tuple[DimensionRow, ...]
    overall_mean: float | None
    overall_n_items: int
    systems: tuple[SystemScore, ...]
    annotators: tuple[AnnotatorQuality, ...]
    disagreements: tuple[DisagreementRow, ...]
    n_resamples: int
    seed: int
    # Further sections (report_sections.REPORT_SECTIONS), by name; filled in by batch_report.
    sections: dict[str, Any] = field(default_factory=dict)
    items: ItemOverall | None = None
    # Quality control (annotator.quality.selectors.report_section.QualitySection): exclusions, signals,
    # agreement with every annotator. The statistics above leave the excluded annotators out.
    quality: Any = None
    # The arrays the statistics above read (without excluded annotators), for views that read further.
    arrays: ReportArrays | None = field(default=None, repr=False, compare=False)
    # The seed of the random order the queue hands items out in (annotator.rating.services.queue_order); None:
    # file order. The methods paragraph states it.
    order_seed: int | None = None

    @property
    def categories(self) -> tuple[int, ...]:
        return self.rubric.levels

    def disagreements_for(self, key: str) -> list[DisagreementRow]:
        return [d for d in self.disagreements if d.dimension == key]


def batch_report(
    *,
    batch: Batch,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    epsilon: float = DEFAULT_EPSILON,
    with_sections: bool = True,
    quality_over_time: bool = True,
) -> BatchReport:
    """:func:`batch_report_computed`, served from the report stored for the batch's revision when
    there is one (:mod:`annotator.reports.selectors.stored`)."""
    from annotator.reports.selectors.stored import options_key
    from annotator.reports.services.storing import report_through_cache

    options = {"n_resamples": n_resamples, "seed": seed, "epsilon": float(epsilon)}
    key = options_key("report", **options, sections=with_sections, over_time=quality_over_time)
    # A report with more in it serves a request for less: the page's report without the judge
    # sections comes out of the whole report an export or the background job stored.
    fuller = [
        options_key("report", **options, sections=sections, over_time=over_time)
        for sections in (True, with_sections)
        for over_time in (True, quality_over_time)
    ]
    also = tuple(dict.fromkeys(k for k in fuller if k != key))

    def pick(whole: BatchReport) -> BatchReport:
        quality = whole.quality
        if not quality_over_time and quality is not None:
            quality = replace(quality, over_time=None)
        return replace(whole, sections=whole.sections if with_sections else {}, quality=quality)

    return report_through_cache(
        batch=batch,
        key=key,
        also=also,
        pick=pick,
        compute=lambda: batch_report_computed(
            batch=batch,
            n_resamples=n_resamples,
            seed=seed,
            epsilon=epsilon,
            with_sections=with_sections,
            quality_over_time=quality_over_time,
        ),
    )


def batch_report_computed(
    *,
    batch: Batch,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    epsilon: float = DEFAULT_EPSILON,
    with_sections: bool = True,
    quality_over_time: bool = True,
) -> BatchReport:
    """The whole report of ``batch``; ``epsilon`` is the alt-test margin of the judges section.

    Agreement, HCS, ranking and the judge sections leave excluded annotators out; the annotator
    table lists everyone, and ``quality`` says who was left out and why. ``with_sections=False``
    leaves out the judge sections, which the report page asks for separately; ``quality_over_time=False``
    the agreement-over-time series, which the dataset card does not show."""
    everyone_arrays = report_arrays(batch=batch)
    inputs = quality_report.quality_inputs(batch=batch, arrays=everyone_arrays)
    arrays = inputs.kept_arrays  # without excluded annotators: agreement, HCS, ranking, calibration
    report = report_from_arrays(batch=batch, arrays=arrays, n_resamples=n_resamples, seed=seed)
    everyone = report
    if inputs.any_excluded:
        everyone = report_from_arrays(batch=batch, arrays=everyone_arrays, n_resamples=n_resamples, seed=seed)
        report = replace(report, annotators=everyone.annotators)  # the table lists everyone
    if with_sections:
        sections = sections_from_arrays(
            batch=batch, arrays=arrays, epsilon=epsilon, n_resamples=n_resamples, seed=seed
        )
        report = replace(report, sections=sections)
    quality = quality_report.quality_section(
        batch=batch,
        inputs=inputs,
        annotators_all=everyone.annotators,
        dimensions_all=everyone.dimensions,
        with_over_time=quality_over_time,
    )
    return replace(report, quality=quality, arrays=arrays)


def sections_from_arrays(
    *,
    batch: Batch,
    arrays: ReportArrays,
    epsilon: float = DEFAULT_EPSILON,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> dict[str, Any]:
    """The report's further sections, by name, as ``REPORT_SECTIONS`` lists them."""
    return report_sections(
        SectionInputs(batch=batch, arrays=arrays, epsilon=epsilon, n_resamples=n_resamples, seed=seed)
    )


def annotation_overall(rubric: Rubric, arrays: ReportArrays) -> np.ndarray:
    """The overall HCS of each annotation (the rubric's weighted sum; NaN when a dimension is unrated): what
    the report's per-item overall means, its systems and the paired comparisons read."""
    return overall_per_annotation(arrays.annotation_scores, np.array([d.weight for d in rubric.dimensions]))


def report_from_arrays(*, batch: Batch, arrays: ReportArrays, n_resamples: int, seed: int) -> BatchReport:
    rubric = batch.rubric_obj
    cats = list(rubric.levels)
    dimension_rows, disagreements = [], []
    for j, dim in enumerate(rubric.dimensions):
        rated = arrays.counts[j].sum(axis=1) > 0
        agreement = dimension_agreement(
            arrays.counts[j][rated],
            arrays.fleiss_counts[j][arrays.fleiss_counts[j].sum(axis=1) > 0],
            cats,
            k=batch.k,
            n_resamples=n_resamples,
            seed=seed + j,
        )
        dimension_rows.append(DimensionRow(key=dim.key, label=dim.label, agreement=agreement))
        rows = np.flatnonzero(rated)
        for d in widest_spread(
            arrays.counts[j][rated], rows, cats, dim.key, limit=DISAGREEMENTS_PER_DIMENSION
        ):
            disagreements.append(
                DisagreementRow(
                    item_pk=int(arrays.item_pk[d.item]),
                    item_id=arrays.item_id[d.item],
                    system_id=arrays.system_names[arrays.item_system[d.item]],
                    dimension=dim.key,
                    dimension_label=dim.label,
                    spread=d.spread,
                    sd=d.sd,
                    distribution=d.distribution,
                )
            )
    overall = annotation_overall(rubric, arrays)
    n_items = len(arrays.item_pk)
    per_item = item_summaries(arrays.annotation_item, overall, n_items=n_items)
    finite = np.isfinite(per_item.mean)
    systems = rank_systems(
        per_item.mean, arrays.item_system, arrays.system_names, n_resamples=n_resamples, seed=seed
    )
    annotators = annotator_quality(
        arrays.annotation_item,
        arrays.annotation_annotator,
        arrays.annotation_scores,
        overall,
        dimensions=rubric.dimension_keys,
        annotator_names=arrays.annotator_names,
        n_items=n_items,
    )
    return BatchReport(
        batch_id=batch.pk,
        batch_name=batch.name,
        k=batch.k,
        rubric=rubric,
        n_items=n_items,
        n_items_rated=int((arrays.counts.sum(axis=(0, 2)) > 0).sum()),
        n_annotations=len(overall),
        dimensions=tuple(dimension_rows),
        overall_mean=float(per_item.mean[finite].mean()) if finite.any() else None,
        overall_n_items=int(finite.sum()),
        systems=tuple(systems),
        annotators=tuple(sorted(annotators, key=lambda a: a.annotator)),
        disagreements=tuple(disagreements),
        n_resamples=n_resamples,
        seed=seed,
        order_seed=batch.order_seed,
        items=ItemOverall(
            item_id=arrays.item_id,
            system_id=[arrays.system_names[s] for s in arrays.item_system],
            n=per_item.n,
            mean=per_item.mean,
            sd=per_item.sd,
        ),
    )
