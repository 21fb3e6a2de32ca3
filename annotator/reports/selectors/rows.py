"""Row-level reads for the report pages and exports: the batch list, every annotation of a
batch in submission order (streamed), and one item's annotations for adjudication."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from functools import lru_cache
from typing import Any, NamedTuple

from django.db import connection
from django.db.models import BooleanField, Count, OuterRef, Subquery, Sum
from django.db.models.expressions import RawSQL

from annotator.db_private import compiled_sql
from annotator.db_rows import chunked_cursor, converter
from annotator.models import Annotation, Batch, Item, Score
from annotator.models.annotation import SCORE_MAX, SCORE_MIN
from annotator.quality.selectors.standing import excluded_annotator_ids
from annotator.rating.selectors.queue import conversation_turns
from annotator.reports.selectors.score_packing import Packing


def batches_for_reports():
    """Batches with their item and annotation counts, newest first."""
    return Batch.objects.annotate(
        n_items=Count("items", distinct=True), n_annotations=Count("items__annotations", distinct=True)
    ).order_by("-created_at", "name")


class AnnotationRecord(NamedTuple):
    """One annotation of a batch, as the exports and the API read it."""

    id: int
    item_id: str
    system_id: str
    annotator: str
    submitted_at: datetime
    flags: tuple[str, ...]
    comment: str
    constraints_met: tuple[bool, ...]
    scores: tuple[int | None, ...]  # in the rubric's dimension order; None: not rated
    prompt: str  # "" unless asked for (with_text)
    response: str
    excluded: bool  # the annotator is excluded from the batch's statistics (researcher or block rule)


_COLUMNS = (
    "id",
    "item__item_id",
    "item__system_id",
    "annotator__username",
    "submitted_at",
    "flags",
    "comment",
    "constraints_met",
    "annotator_id",
)
_ANNOTATOR_ID = _COLUMNS.index("annotator_id")
_TEXT = ("item__prompt", "item__response")
FETCH = 2_000  # rows per fetch
_REMEMBERED = 1_024  # distinct values each conversion remembers


def annotation_records(
    *,
    batch: Batch,
    with_text: bool = False,
    after: tuple[datetime, int] | None = None,
    limit: int | None = None,
) -> Iterator[AnnotationRecord]:
    """Every annotation of the batch with its item, annotator and scores, in submission order
    (imported rows keep file order by id).

    One ordered query, streamed from a chunked (on PostgreSQL server-side) cursor: each row
    carries its annotation's scores packed into integers (a subquery per packed column, on the
    one-score-per-dimension index), so no score row reaches Python. Dates and JSON are converted
    as the ORM converts them, each distinct value once (imported rows share a timestamp, and
    flags and constraint answers take few values).

    ``after`` (submitted_at, id) and ``limit`` give one page: the ``limit`` annotations after that one.
    """
    dims = batch.rubric_obj.dimension_keys
    packing = Packing(dims, SCORE_MIN, SCORE_MAX)  # the stored scale: every stored score unpacks
    packed = {
        f"packed{n}": Subquery(
            Score.objects.filter(annotation=OuterRef("pk"))
            .values("annotation_id")
            .annotate(packed=Sum(packing.digits(group, dimension="dimension", value="value")))
            .values("packed")
        )
        for n, group in enumerate(packing.groups)
    }
    annotations = Annotation.objects.filter(item__batch=batch)
    if after is not None:
        annotations = annotations.filter(_after(*after))
    if (
        limit is not None
    ):  # the page's ids first: a walk along the submission-order index that stops at ``limit``
        page = list(annotations.order_by("submitted_at", "id").values_list("pk", flat=True)[:limit])
        if not page:  # `pk IN ()` cannot be compiled to SQL: an empty page is no rows
            return
        annotations = Annotation.objects.filter(pk__in=page)
    query = (
        annotations.annotate(**packed)
        .order_by("submitted_at", "id")
        .values_list(*_COLUMNS, *packed, *(_TEXT if with_text else ()))
    )
    when = lru_cache(maxsize=_REMEMBERED)(converter(Annotation, "submitted_at"))
    flags = _remembered_tuple(converter(Annotation, "flags"))
    met = _remembered_tuple(converter(Annotation, "constraints_met"))
    scores = lru_cache(maxsize=_REMEMBERED)(lambda *columns: packing.unpack(columns))
    first_packed = len(_COLUMNS)
    first_text = first_packed + len(packing.groups)
    excluded = excluded_annotator_ids(batch=batch)  # a handful of ids, read once
    sql, params = compiled_sql(query)
    with chunked_cursor() as cursor:
        cursor.execute(sql, params)
        while rows := cursor.fetchmany(FETCH):
            for row in rows:
                yield AnnotationRecord(
                    row[0],
                    row[1],
                    row[2],
                    row[3],
                    when(row[4]),
                    flags(row[5]),
                    row[6],
                    met(row[7]),
                    scores(*row[first_packed:first_text]),
                    row[first_text] if with_text else "",
                    row[first_text + 1] if with_text else "",
                    row[_ANNOTATOR_ID] in excluded,
                )


def _remembered_tuple(convert: Callable[[Any], Any]) -> Callable[[Any], tuple]:
    """A JSON list column's converter whose result is a tuple (shared by every row with the same
    stored value, so it must not change), remembering the last ``_REMEMBERED`` distinct values."""
    return lru_cache(maxsize=_REMEMBERED)(lambda value: tuple(convert(value) or ()))


def annotation_rows(
    *,
    batch: Batch,
    with_text: bool = False,
    after: tuple[datetime, int] | None = None,
    limit: int | None = None,
) -> Iterator[dict[str, Any]]:
    """:func:`annotation_records` as dictionaries, with each annotation's scores by dimension and
    its overall score (the API's pages)."""
    rubric = batch.rubric_obj
    dims = rubric.dimension_keys
    for a in annotation_records(batch=batch, with_text=with_text, after=after, limit=limit):
        scores = dict(zip(dims, a.scores, strict=True))
        yield {
            "annotation_id": a.id,
            "item_id": a.item_id,
            "system_id": a.system_id,
            "annotator": a.annotator,
            "flags": list(a.flags),
            "comment": a.comment,
            "submitted_at": a.submitted_at,
            "scores": scores,
            "constraints_met": list(a.constraints_met),
            "prompt": a.prompt,
            "response": a.response,
            "overall_hcs": rubric.overall(scores),
            "excluded": a.excluded,
        }


def _after(submitted_at: datetime, pk: int) -> RawSQL:
    """(submitted_at, id) > (the cursor's): a row-value comparison, which PostgreSQL and SQLite answer
    from the (submitted_at, id) index; the ORM's equivalent OR of two conditions scans every tie."""
    table = connection.ops.quote_name(Annotation._meta.db_table)
    when = Annotation._meta.get_field("submitted_at").get_db_prep_value(submitted_at, connection)  # as stored
    return RawSQL(f"({table}.submitted_at, {table}.id) > (%s, %s)", [when, pk], output_field=BooleanField())


def score_rows(annotations: Iterable[dict[str, Any]], dimensions: tuple[str, ...]) -> Iterator[list[Any]]:
    """The long format: one row per score of ``annotation_rows``, as
    (item_id, system_id, annotator, dimension, score, overall_hcs, submitted_at, excluded)."""
    for a in annotations:
        for d in dimensions:
            if a["scores"][d] is not None:
                yield [
                    a["item_id"],
                    a["system_id"],
                    a["annotator"],
                    d,
                    a["scores"][d],
                    a["overall_hcs"],
                    a["submitted_at"],
                    a["excluded"],
                ]


def item_annotations(*, item: Item) -> list[dict[str, Any]]:
    """All annotations of one item for adjudication: scores in rubric order, flags by label."""
    rubric = item.batch.rubric_obj
    flag_labels = {f.key: f.label for f in rubric.flags}
    rows = []
    for a in (
        item.annotations.select_related("annotator").prefetch_related("scores").order_by("submitted_at", "id")
    ):
        scores = {s.dimension: s.value for s in a.scores.all()}
        rows.append(
            {
                "annotator": a.annotator.get_username(),
                "values": [scores.get(d) for d in rubric.dimension_keys],
                "overall_hcs": rubric.overall(scores),
                "flag_labels": [flag_labels.get(f, f) for f in a.flags or []],
                "comment": a.comment,
                "submitted_at": a.submitted_at,
                "seconds_on_item": a.seconds_on_item,
                "constraints": constraint_answers(item.constraints, a.constraints_met),
            }
        )
    return rows


def constraint_answers(constraints, met) -> list[dict[str, Any]]:
    """The annotator's met / not-met answer per hard constraint; empty when none were stored
    (imported annotations, items without constraints)."""
    met = list(met or [])
    if not constraints or len(met) != len(constraints):
        return []
    return [{"text": str(text), "met": bool(m)} for text, m in zip(constraints, met, strict=True)]


def item_report(*, item: Item) -> dict[str, Any]:
    """One item's annotations with its overall HCS mean and spread, as on the batch report."""
    import numpy as np

    from hcs.numbers import finite_or_none
    from hcs.scoring import item_summaries

    rows = item_annotations(item=item)
    values = np.array([np.nan if r["overall_hcs"] is None else r["overall_hcs"] for r in rows], dtype=float)
    summary = item_summaries(np.zeros(len(rows), dtype=np.int64), values, n_items=1)
    return {
        "rows": rows,
        "turns": conversation_turns(item),
        "overall_mean": finite_or_none(summary.mean[0]),
        "overall_sd": finite_or_none(summary.sd[0]),
        "dimensions": item.batch.rubric_obj.dimensions,
    }
