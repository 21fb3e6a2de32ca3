"""Row-level reads for the report pages and exports: the batch list, every annotation of a
batch in submission order (streamed), and one item's annotations for adjudication."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.db.models import Count

from annotator.models import Annotation, Batch, Item
from hcs.rubric import Rubric


def batches_for_reports():
    """Batches with their item and annotation counts, newest first."""
    return Batch.objects.annotate(
        n_items=Count("items", distinct=True), n_annotations=Count("items__annotations", distinct=True)
    ).order_by("-created_at", "name")


def annotation_rows(*, batch: Batch, with_text: bool = False) -> Iterator[dict[str, Any]]:
    """Every annotation of the batch with its item, annotator, scores, flags and overall score,
    in submission order (imported rows keep file order by id). Streams from the database:
    one joined row per score, grouped back into annotations as they arrive."""
    rubric = batch.rubric_obj
    dims = rubric.dimension_keys
    text = ("item__prompt", "item__response") if with_text else ()
    qs = (
        Annotation.objects.filter(item__batch=batch)
        .order_by("submitted_at", "id")
        .values_list(
            "id", "item__item_id", "item__system_id", "annotator__username", "flags", "comment",
            "submitted_at", "scores__dimension", "scores__value", *text,
        )
    )
    current: dict[str, Any] | None = None
    current_pk = None
    for row in qs.iterator(chunk_size=10_000):
        pk = row[0]
        if pk != current_pk:
            if current is not None:
                yield _finish(current, rubric)
            current_pk = pk
            current = {
                "item_id": row[1], "system_id": row[2], "annotator": row[3], "flags": list(row[4] or []),
                "comment": row[5], "submitted_at": row[6], "scores": dict.fromkeys(dims),
                "prompt": row[9] if with_text else "", "response": row[10] if with_text else "",
            }
        if row[7] in current["scores"]:
            current["scores"][row[7]] = row[8]
    if current is not None:
        yield _finish(current, rubric)


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
            }
        )
    return rows


def item_report(*, item: Item) -> dict[str, Any]:
    """One item's annotations with its overall HCS mean and spread, as on the batch report."""
    import numpy as np

    from hcs.scoring import item_summaries

    rows = item_annotations(item=item)
    values = np.array([np.nan if r["overall_hcs"] is None else r["overall_hcs"] for r in rows], dtype=float)
    summary = item_summaries(np.zeros(len(rows), dtype=np.int64), values, n_items=1)
    mean, sd = float(summary.mean[0]), float(summary.sd[0])
    return {
        "rows": rows,
        "overall_mean": None if np.isnan(mean) else mean,
        "overall_sd": None if np.isnan(sd) else sd,
        "dimensions": item.batch.rubric_obj.dimensions,
    }
