"""The one bridge from the database to ``hcs``: SQL aggregates → arrays → statistics → a report.

Agreement needs only counts per item × dimension × score, which come from one grouped
query (memory follows items × categories, not annotations). HCS per annotation, the
per-annotator table and the per-system table need each annotation's scores, which
come from a second query grouped per annotation (one row of small integers each).
Views, exports and the ``export_report`` command all call :func:`batch_report`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from itertools import chain
from typing import Any

import numpy as np
from django.contrib.auth import get_user_model
from django.db import connection

from annotator.models import Annotation, Batch, Item, Score
from hcs.agreement import DimensionAgreement, dimension_agreement
from hcs.agreement.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED
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

FETCH = 50_000
DISAGREEMENTS_PER_DIMENSION = 10


# ------------------------------------------------------------------ arrays from SQL
@dataclass(frozen=True)
class ReportArrays:
    """Everything the statistics need, as arrays indexed by item row / annotation row."""

    item_pk: np.ndarray  # item rows, in batch order
    item_id: list[str]
    item_system: np.ndarray  # system index per item row
    system_names: list[str]
    counts: np.ndarray  # dimensions × items × categories, all ratings
    fleiss_counts: np.ndarray  # dimensions × items × categories, first k of items with ≥ k ratings
    annotation_item: np.ndarray  # item row per annotation
    annotation_annotator: np.ndarray  # annotator index per annotation
    annotation_scores: np.ndarray  # annotations × dimensions, NaN = not rated
    annotator_names: list[str]


def _tables() -> dict[str, str]:
    return {
        "score": Score._meta.db_table,
        "item": Item._meta.db_table,
        "annotation": Annotation._meta.db_table,
    }


def _dimension_case(column: str, keys: tuple[str, ...]) -> tuple[str, list[str]]:
    whens = " ".join(f"WHEN %s THEN {i}" for i in range(len(keys)))
    return f"CASE {column} {whens} ELSE -1 END", list(keys)


def _fetch(sql: str, params: list[Any], width: int) -> np.ndarray:
    """Run ``sql`` and return its integer rows (no NULLs) as an (n, width) array, read in chunks."""
    chunks = []
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        while rows := cursor.fetchmany(FETCH):
            flat = np.fromiter(chain.from_iterable(rows), dtype=np.int64, count=len(rows) * width)
            chunks.append(flat.reshape(-1, width))
    return np.concatenate(chunks) if chunks else np.zeros((0, width), dtype=np.int64)


# Run the per-annotation query on a second database connection while the grouped count
# query runs on this one: the two scans overlap. Not inside a transaction (another
# connection could not see its uncommitted rows); tests switch it off or on explicitly.
PARALLEL_QUERIES = True


def _alongside(func: Callable[..., Any], *args: Any) -> Callable[[], Any]:
    """Start ``func(*args)`` in a worker thread with its own connection; call the result to wait."""
    if not PARALLEL_QUERIES or connection.in_atomic_block:
        value = func(*args)
        return lambda: value

    def work():
        try:
            return func(*args)
        finally:
            connection.close()  # the worker thread's own connection

    pool = ThreadPoolExecutor(max_workers=1)
    future = pool.submit(work)
    pool.shutdown(wait=False)
    return future.result


def _count_matrix(rows: np.ndarray, row_of_item: dict[int, int] | np.ndarray, shape: tuple[int, int, int],
                  scale_min: int) -> np.ndarray:
    """(item pk, dimension, value, count) rows → dimensions × items × categories."""
    out = np.zeros(shape, dtype=np.int64)
    keep = (rows[:, 1] >= 0) & (rows[:, 2] >= scale_min) & (rows[:, 2] < scale_min + shape[2])
    rows = rows[keep]
    items = np.searchsorted(row_of_item[0], rows[:, 0].astype(np.int64))
    out[rows[:, 1].astype(int), row_of_item[1][items], rows[:, 2].astype(int) - scale_min] = rows[:, 3]
    return out


def report_arrays(*, batch: Batch) -> ReportArrays:
    rubric = batch.rubric_obj
    dims = rubric.dimension_keys
    t = _tables()
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id, item_id, system_id FROM {t['item']} WHERE batch_id = %s ORDER BY position, id", [batch.pk]
        )
        items = cursor.fetchall()
    item_pk = np.array([i[0] for i in items], dtype=np.int64)
    systems = sorted({i[2] for i in items})
    system_index = {s: n for n, s in enumerate(systems)}
    sorter = np.argsort(item_pk)
    lookup = (item_pk[sorter], sorter)  # sorted pks and the item row of each
    shape = (len(dims), len(items), rubric.scale_max - rubric.scale_min + 1)

    # Per annotation, its scores packed into integers in base (scale max + 1), 0 = not rated,
    # as many dimensions per column as fit in 31 bits. Started first, on a second connection
    # when possible, so it runs while the grouped count query below runs here.
    base = rubric.scale_max + 1
    per_column = max(1, int(31 / np.log2(base)))
    groups = [dims[g:g + per_column] for g in range(0, len(dims), per_column)]
    sums = ", ".join(
        "COALESCE(SUM(s.value * CASE s.dimension "
        + " ".join(f"WHEN %s THEN {base ** j}" for j in range(len(g)))
        + " ELSE 0 END), 0)"
        for g in groups
    )
    annotations_sql = (
        f"SELECT a.item_id, a.annotator_id, {sums} "
        f"FROM {t['annotation']} a JOIN {t['item']} i ON i.id = a.item_id "
        f"LEFT JOIN {t['score']} s ON s.annotation_id = a.id "
        f"WHERE i.batch_id = %s GROUP BY a.id, a.item_id, a.annotator_id"
    )
    pending = _alongside(_fetch, annotations_sql, [*(d for g in groups for d in g), batch.pk], 2 + len(groups))

    # The grouped query: counts per item × dimension × score.
    case, case_params = _dimension_case("s.dimension", dims)
    counts_sql = (
        f"SELECT s.item_id, {case} AS d, s.value, COUNT(*) FROM {t['score']} s "
        f"JOIN {t['item']} i ON i.id = s.item_id WHERE i.batch_id = %s "
        f"GROUP BY s.item_id, s.dimension, s.value"
    )
    counts = _count_matrix(_fetch(counts_sql, [*case_params, batch.pk], 4), lookup, shape, rubric.scale_min)

    # Fleiss: the first k ratings of items rated at least k times. Only when some item has
    # more than k ratings does "first" matter; then a windowed query picks them.
    totals = counts.sum(axis=2)
    if (totals > batch.k).any():
        fleiss_sql = (
            f"SELECT item_id, d, value, COUNT(*) FROM ("
            f" SELECT s.item_id, {case} AS d, s.value, ROW_NUMBER() OVER ("
            f"  PARTITION BY s.item_id, s.dimension ORDER BY a.submitted_at, a.id) AS rn"
            f" FROM {t['score']} s JOIN {t['annotation']} a ON a.id = s.annotation_id"
            f" JOIN {t['item']} i ON i.id = s.item_id WHERE i.batch_id = %s) ranked "
            f"WHERE rn <= %s GROUP BY item_id, d, value"
        )
        fleiss = _count_matrix(
            _fetch(fleiss_sql, [*case_params, batch.pk, batch.k], 4), lookup, shape, rubric.scale_min
        )
    else:
        fleiss = counts.copy()
    fleiss[fleiss.sum(axis=2) != batch.k] = 0

    rows = pending()
    digits = np.concatenate(
        [(rows[:, 2 + n, None] // (base ** np.arange(len(g)))[None, :]) % base for n, g in enumerate(groups)], axis=1
    ) if len(rows) else np.zeros((0, len(dims)), dtype=np.int64)
    scores = np.where(digits > 0, digits, np.nan)
    annotation_item = lookup[1][np.searchsorted(lookup[0], rows[:, 0])]
    user_pks, annotation_annotator = np.unique(rows[:, 1], return_inverse=True)
    annotation_annotator = annotation_annotator.ravel()
    # GROUP BY returns rows in no particular order; a fixed order (item, then annotator) makes
    # floating-point sums, and so the report, the same every time for the same ratings.
    order = np.lexsort((annotation_annotator, annotation_item))
    annotation_item, annotation_annotator, scores = annotation_item[order], annotation_annotator[order], scores[order]
    names = dict(
        get_user_model().objects.filter(pk__in=user_pks.tolist()).values_list("pk", get_user_model().USERNAME_FIELD)
    )
    return ReportArrays(
        item_pk=item_pk,
        item_id=[i[1] for i in items],
        item_system=np.array([system_index[i[2]] for i in items], dtype=np.int64),
        system_names=systems,
        counts=counts,
        fleiss_counts=fleiss,
        annotation_item=annotation_item.astype(np.int64),
        annotation_annotator=annotation_annotator.astype(np.int64),
        annotation_scores=scores,
        annotator_names=[names.get(int(pk), f"user {pk}") for pk in user_pks],
    )


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
            mean, sd = float(self.mean[i]), float(self.sd[i])
            yield (item_id, self.system_id[i], int(self.n[i]),
                   None if np.isnan(mean) else mean, None if np.isnan(sd) else sd)


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
    # Further sections (e.g. judge calibration), by name; see register_report_section.
    sections: dict[str, Any] = field(default_factory=dict)
    items: ItemOverall | None = None

    @property
    def categories(self) -> tuple[int, ...]:
        return self.rubric.levels

    def disagreements_for(self, key: str) -> list[DisagreementRow]:
        return [d for d in self.disagreements if d.dimension == key]


SectionBuilder = Callable[[Batch, ReportArrays, BatchReport], Any]
_SECTION_BUILDERS: dict[str, SectionBuilder] = {}


def register_report_section(name: str, builder: SectionBuilder) -> None:
    """Add a section to every report: ``builder(batch, arrays, report)`` returns its value.

    The value lands in ``report.sections[name]``; exports put ``value.to_json()`` (or the
    value itself when it is plain JSON) under ``name`` in the JSON export.
    """
    _SECTION_BUILDERS[name] = builder


def batch_report(
    *, batch: Batch, n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> BatchReport:
    arrays = report_arrays(batch=batch)
    report = report_from_arrays(batch=batch, arrays=arrays, n_resamples=n_resamples, seed=seed)
    if _SECTION_BUILDERS:
        sections = {name: build(batch, arrays, report) for name, build in _SECTION_BUILDERS.items()}
        report = replace(report, sections=sections)
    return report


def report_from_arrays(*, batch: Batch, arrays: ReportArrays, n_resamples: int, seed: int) -> BatchReport:
    rubric = batch.rubric_obj
    cats = list(rubric.levels)
    weights = np.array([d.weight for d in rubric.dimensions])
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
        for d in widest_spread(arrays.counts[j][rated], rows, cats, dim.key, limit=DISAGREEMENTS_PER_DIMENSION):
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
    overall = overall_per_annotation(arrays.annotation_scores, weights)
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
        items=ItemOverall(
            item_id=arrays.item_id,
            system_id=[arrays.system_names[s] for s in arrays.item_system],
            n=per_item.n,
            mean=per_item.mean,
            sd=per_item.sd,
        ),
    )
