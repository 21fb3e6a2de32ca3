"""Annotations in long format (one row per score), a page at a time (researchers).

The rows are the long CSV export's (``scores.csv``), with the annotation's id: a page holds
``limit`` annotations in submission order, so up to ``limit`` × dimensions rows.
"""

from __future__ import annotations

from datetime import datetime

from django.shortcuts import get_object_or_404
from ninja import Query, Router
from pydantic import BaseModel

from annotator.api.auth import researchers
from annotator.api.pagination import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    decode_cursor,
    encode_cursor,
    next_link,
)
from annotator.api.schemas import ERRORS
from annotator.models import Batch
from annotator.reports.exports.csv_tables import SCORES_COLUMNS
from annotator.reports.selectors.rows import annotation_rows, score_rows

router = Router(tags=["annotations"])


# Plain pydantic models: ninja's Schema reads each row through a Django attribute getter, which
# costs more than the database query on a page of thousands of rows; these rows are dicts already.
class ScoreRowOut(BaseModel):
    annotation_id: int
    item_id: str
    system_id: str
    annotator: str
    dimension: str
    score: int
    overall_hcs: float | None
    submitted_at: datetime
    excluded: bool  # the annotator is excluded from the batch's statistics


class AnnotationPage(BaseModel):
    items: list[ScoreRowOut]
    next_cursor: str | None
    next: str | None


@router.get(
    "/batches/{int:batch_id}/annotations",
    response={200: AnnotationPage, **ERRORS},
    auth=researchers,
    url_name="annotations",
    summary="Annotations of a batch, long format, cursor-paginated (researchers)",
)
def annotations(
    request,
    batch_id: int,
    cursor: str | None = None,
    limit: int = Query(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT, description="annotations per page"),
):
    batch = get_object_or_404(Batch, pk=batch_id)
    after = decode_cursor(cursor, (datetime.fromisoformat, int))
    page = list(annotation_rows(batch=batch, after=tuple(after) if after else None, limit=limit + 1))
    next_cursor = None
    if len(page) > limit:  # more to come: the next page starts after the last annotation of this one
        page = page[:limit]
        next_cursor = encode_cursor([page[-1]["submitted_at"].isoformat(), page[-1]["annotation_id"]])
    dimensions = batch.rubric_obj.dimension_keys
    rows = [
        {"annotation_id": a["annotation_id"], **dict(zip(SCORES_COLUMNS, row))}
        for a in page
        for row in score_rows([a], dimensions)
    ]
    return {"items": rows, "next_cursor": next_cursor, "next": next_link(request, next_cursor)}
