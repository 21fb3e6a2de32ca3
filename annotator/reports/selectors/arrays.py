"""The one bridge from the database to ``hcs``: one ordered query → numpy arrays.

A report reads every annotation of the batch once, as one row per annotation (its item, its
annotator and its scores packed into integers), ordered by item and then submission time.
Everything else is derived here with numpy: the counts per item × dimension × score that
agreement needs, the "first k ratings" counts that Fleiss' κ needs (first by submission time),
and the per-annotation score matrix that HCS, the per-annotator and per-system tables need.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

import numpy as np
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Q, QuerySet, Sum, Value
from django.db.models.functions import Coalesce

from annotator.db_private import compiled_sql
from annotator.models import Annotation, Batch, Item
from annotator.reports.selectors.score_packing import Packing

FETCH = 50_000  # rows per fetchmany


@dataclass(frozen=True)
class ReportArrays:
    """Everything the statistics need, as arrays indexed by item row / annotation row."""

    item_pk: np.ndarray  # item rows, in batch order
    item_id: list[str]
    item_system: np.ndarray  # system index per item row
    system_names: list[str]
    counts: np.ndarray  # dimensions × items × categories, all ratings
    fleiss_counts: np.ndarray  # dimensions × items × categories, first k of items with ≥ k ratings
    annotation_item: np.ndarray  # item row per annotation (annotations grouped by item, by submission time)
    annotation_annotator: np.ndarray  # annotator index per annotation
    annotation_scores: np.ndarray  # annotations × dimensions, NaN = not rated
    annotator_names: list[str]


def _packed_scores_query(batch: Batch, packing: Packing):
    """One row per annotation of ``batch``: (item pk, annotator pk, packed column, …), scores
    packed as ``packing`` says (in-scale scores only). Rows come grouped by item (batch order),
    each item's annotations by submission time."""
    in_scale = Q(scores__value__gte=packing.scale_min, scores__value__lte=packing.scale_max)
    columns = {
        f"packed{n}": Coalesce(
            Sum(packing.digits(group, dimension="scores__dimension", value="scores__value"), filter=in_scale),
            Value(0),
        )
        for n, group in enumerate(packing.groups)
    }
    return (
        Annotation.objects.filter(item__batch=batch)
        .values("id", "item_id", "annotator_id", "item__position", "submitted_at")
        .annotate(**columns)
        .order_by("item__position", "item_id", "submitted_at", "id")
        .values_list("item_id", "annotator_id", *columns)
    )


def _integer_rows(query: QuerySet, width: int) -> np.ndarray:
    """The rows of ``query`` (integers, no NULLs) as an (n, width) array, read in chunks straight
    from the cursor: the ORM writes the SQL, numpy holds the result (no model or tuple per row)."""
    sql, params = compiled_sql(query)
    chunks = []
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        while rows := cursor.fetchmany(FETCH):
            chunks.append(np.fromiter(chain.from_iterable(rows), dtype=np.int64, count=len(rows) * width))
    return np.concatenate(chunks).reshape(-1, width) if chunks else np.zeros((0, width), dtype=np.int64)


def _unpack(packed: np.ndarray, packing: Packing) -> np.ndarray:
    """Packed columns → annotations × dimensions digits (0 = not rated)."""
    base = packing.base
    if not len(packed):
        return np.zeros((0, len(packing.dims)), dtype=np.int64)
    return np.concatenate(
        [
            (packed[:, n, None] // (base ** np.arange(len(g)))[None, :]) % base
            for n, g in enumerate(packing.groups)
        ],
        axis=1,
    )


def _first_k(item_row: np.ndarray, rated: np.ndarray, k: int) -> np.ndarray:
    """For rows grouped by item in submission order: True for each item's first ``k`` rated rows."""
    running = np.cumsum(rated)
    starts = np.flatnonzero(np.r_[True, item_row[1:] != item_row[:-1]]) if len(item_row) else np.zeros(0, int)
    before = np.repeat(running[starts] - rated[starts], np.diff(np.r_[starts, len(item_row)]))
    return rated & (running - before <= k)


def _count_matrix(
    item_row: np.ndarray, digits: np.ndarray, keep: np.ndarray, n_items: int, n_categories: int
) -> np.ndarray:
    """dimensions × items × categories: how often each item got each score (digit 1 = lowest)."""
    n_dims = digits.shape[1]
    cell = (np.arange(n_dims)[None, :] * n_items + item_row[:, None]) * n_categories + digits - 1
    return np.bincount(cell[keep], minlength=n_dims * n_items * n_categories).reshape(
        n_dims, n_items, n_categories
    )


def report_arrays(*, batch: Batch) -> ReportArrays:
    """Read a batch's annotations in one ordered query and derive every array a report needs."""
    rubric = batch.rubric_obj
    dims = rubric.dimension_keys
    items_sql, params = compiled_sql(
        Item.objects.filter(batch=batch).order_by("position", "id").values_list("id", "item_id", "system_id")
    )
    with connection.cursor() as cursor:  # plain rows: no ORM work per item
        cursor.execute(items_sql, params)
        items = cursor.fetchall()
    item_pk = np.array([i[0] for i in items], dtype=np.int64)
    systems = sorted({i[2] for i in items})
    system_index = {s: n for n, s in enumerate(systems)}
    n_categories = rubric.scale_max - rubric.scale_min + 1

    packing = Packing(dims, rubric.scale_min, rubric.scale_max)
    rows = _integer_rows(_packed_scores_query(batch, packing), 2 + len(packing.groups))
    sorter = np.argsort(item_pk)
    annotation_item = sorter[np.searchsorted(item_pk, rows[:, 0], sorter=sorter)].astype(np.int64)
    digits = _unpack(rows[:, 2:], packing)
    rated = digits > 0
    counts = _count_matrix(annotation_item, digits, rated, len(items), n_categories)
    first = np.stack([_first_k(annotation_item, rated[:, j], batch.k) for j in range(len(dims))], axis=1)
    fleiss = _count_matrix(annotation_item, digits, first.reshape(rated.shape), len(items), n_categories)
    fleiss[fleiss.sum(axis=2) != batch.k] = 0  # Fleiss' κ: only items with k ratings

    user_pks, annotation_annotator = np.unique(rows[:, 1], return_inverse=True)
    User = get_user_model()
    names = dict(User.objects.filter(pk__in=user_pks.tolist()).values_list("pk", User.USERNAME_FIELD))
    return ReportArrays(
        item_pk=item_pk,
        item_id=[i[1] for i in items],
        item_system=np.array([system_index[i[2]] for i in items], dtype=np.int64),
        system_names=systems,
        counts=counts,
        fleiss_counts=fleiss,
        annotation_item=annotation_item,
        annotation_annotator=annotation_annotator.ravel().astype(np.int64),
        annotation_scores=np.where(rated, digits + (rubric.scale_min - 1), np.nan),
        annotator_names=[names.get(int(pk), f"user {pk}") for pk in user_pks],
    )
