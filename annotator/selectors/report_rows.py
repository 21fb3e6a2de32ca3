"""Row-level reads for the report pages and exports: the batch list, every annotation of a
batch in submission order (streamed), and one item's annotations for adjudication."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import BooleanField, Count
from django.db.models.expressions import RawSQL

from annotator.models import Annotation, Batch, Item, Score
from annotator.selectors.queue import conversation_turns
from hcs.rubric import Rubric


def batches_for_reports():
    """Batches with their item and annotation counts, newest first."""
    return Batch.objects.annotate(
        n_items=Count("items", distinct=True), n_annotations=Count("items__annotations", distinct=True)
    ).order_by("-created_at", "name")


def annotation_rows(
    *, batch: Batch, with_text: bool = False, after: tuple[datetime, int] | None = None, limit: int | None = None
) -> Iterator[dict[str, Any]]:
    """Every annotation of the batch with its item, annotator, scores, flags and overall score,
    in submission order (imported rows keep file order by id).

    Streams from the database in two queries walked side by side, both in submission order: the
    annotations (one row each, so their dates and flags are converted once, not once per score)
    and their scores (plain numbers and text, no conversion).

    ``after`` (submitted_at, id) and ``limit`` give one page: the ``limit`` annotations after that one.
    """
    rubric = batch.rubric_obj
    dims = rubric.dimension_keys
    text = ("item__prompt", "item__response") if with_text else ()
    annotations = Annotation.objects.filter(item__batch=batch)
    scores = Score.objects.filter(annotation__item__batch=batch)
    if after is not None:
        annotations = annotations.filter(_after(*after))
        scores = scores.filter(_after(*after))  # on the joined annotation table, which keeps its name
    if limit is not None:  # the page's ids first: a walk along the submission-order index that stops at ``limit``
        page = list(annotations.order_by("submitted_at", "id").values_list("pk", flat=True)[:limit])
        annotations = Annotation.objects.filter(pk__in=page)
        scores = Score.objects.filter(annotation_id__in=page)
    annotations = annotations.order_by("submitted_at", "id").values_list(
        "id", "item__item_id", "item__system_id", "annotator__username", "flags", "comment", "submitted_at",
        "constraints_met", *text,
    )
    score_rows = scores.order_by("annotation__submitted_at", "annotation_id").values_list(
        "annotation_id", "dimension", "value"
    ).iterator(chunk_size=10_000)
    pending = next(score_rows, None)
    for row in annotations.iterator(chunk_size=5_000):
        pk = row[0]
        values = dict.fromkeys(dims)
        while pending is not None and pending[0] == pk:
            if pending[1] in values:
                values[pending[1]] = pending[2]
            pending = next(score_rows, None)
        yield _finish(
            {
                "annotation_id": pk, "item_id": row[1], "system_id": row[2], "annotator": row[3],
                "flags": list(row[4] or []), "comment": row[5], "submitted_at": row[6], "scores": values,
                "constraints_met": list(row[7] or []),
                "prompt": row[8] if with_text else "", "response": row[9] if with_text else "",
            },
            rubric,
        )


def _after(submitted_at: datetime, pk: int) -> RawSQL:
    """(submitted_at, id) > (the cursor's): a row-value comparison, which PostgreSQL and SQLite answer
    from the (submitted_at, id) index; the ORM's equivalent OR of two conditions scans every tie."""
    table = connection.ops.quote_name(Annotation._meta.db_table)
    when = Annotation._meta.get_field("submitted_at").get_db_prep_value(submitted_at, connection)  # as stored
    return RawSQL(f"({table}.submitted_at, {table}.id) > (%s, %s)", [when, pk], output_field=BooleanField())


def score_rows(annotations: Iterable[dict[str, Any]], dimensions: tuple[str, ...]) -> Iterator[list[Any]]:
    """The long format: one row per score of ``annotation_rows``, as
    (item_id, system_id, annotator, dimension, score, overall_hcs, submitted_at)."""
    for a in annotations:
        for d in dimensions:
            if a["scores"][d] is not None:
                yield [a["item_id"], a["system_id"], a["annotator"], d, a["scores"][d], a["overall_hcs"], a["submitted_at"]]


def _finish(row: dict[str, Any], rubric: Rubric) -> dict[str, Any]:
    row["overall_hcs"] = rubric.overall(row["scores"])
    return row


def item_annotations(*, item: Item) -> list[dict[str, Any]]:
    """All annotations of one item for adjudication: scores in rubric order, flags by label."""
    rubric = item.batch.rubric_obj
    flag_labels = {f.key: f.label for f in rubric.flags}
    rows = []
    for a in item.annotations.select_related("annotator").prefetch_related("scores").order_by("submitted_at", "id"):
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
