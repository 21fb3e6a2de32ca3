"""The API's review list: unlabelled items where the judges are least sure (researchers)."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from ninja import Query, Router, Schema
from pydantic import Field

from annotator.api.auth import researchers
from annotator.api.problems import INVALID_REQUEST, Problem
from annotator.api.schemas import ERRORS
from annotator.models import Batch

router = Router(tags=["judges"])
MAX_N = 100_000  # annotator.judges.selectors.review.MAX_N; that module (numpy, scipy) is imported on a request only


class ReviewQuery(Schema):
    n: int = Field(50, ge=1, le=MAX_N, description="how many items")
    judge: list[str] = Field(
        default_factory=list, description="only these judges (repeat the parameter); none: all"
    )


class ReviewItemOut(Schema):
    item_id: str
    system_id: str
    uncertainty: float | None = Field(
        description="rubric points; null when no signal says how sure the judge is"
    )
    reason: str


class ReviewOut(Schema):
    items: list[ReviewItemOut]


@router.get(
    "/batches/{int:batch_id}/review",
    response={200: ReviewOut, **ERRORS},
    auth=researchers,
    url_name="review_items",
    summary="Unlabelled items ranked by judge uncertainty (researchers)",
)
def review(request, batch_id: int, query: Query[ReviewQuery]):
    """Items with judge scores and no counted human annotation, most uncertain first: the columns of
    ``select_for_review`` (item_id, system_id, uncertainty, reason)."""
    from annotator.judges.selectors.review import ReviewError, review_candidates

    batch = get_object_or_404(Batch, pk=batch_id)
    try:
        rows = review_candidates(batch=batch, n=query.n, judges=query.judge or None)
    except ReviewError as exc:
        raise Problem(422, str(exc), kind=INVALID_REQUEST) from None
    return {"items": [r.to_json() for r in rows]}
