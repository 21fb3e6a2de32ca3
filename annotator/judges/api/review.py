"""The API's review list: unlabelled items where the judges are least sure (researchers), and the recorded
draw whose labels the report weights (read: researchers; make and retire: admins, as it moves the queue)."""

from __future__ import annotations

from datetime import datetime

from django.shortcuts import get_object_or_404
from ninja import Query, Router, Schema
from ninja.responses import Status
from pydantic import Field

from annotator.api.auth import admins, researchers
from annotator.api.problems import INVALID_REQUEST, Problem
from annotator.api.schemas import ERRORS
from annotator.judges.selectors.draws import draw_in_force
from annotator.models import Batch, ReviewDraw

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


class DrawIn(Schema):
    budget: int = Field(description="expected number of items drawn (Σπ); at most the candidates")
    seed: int | None = Field(None, ge=0, le=2**31 - 1, description="none: chosen at random and recorded")
    judge: list[str] = Field(default_factory=list, description="only these judges' uncertainty; none: all")


class DrawItemOut(Schema):
    item_id: str
    system_id: str
    pi: float = Field(description="the probability the item had of being drawn")
    drawn: bool
    labelled_before: bool = Field(description="labelled before the draw: in the estimate with π = 1")
    uncertainty: float | None


class DrawOut(Schema):
    id: int
    batch_id: int
    budget: int
    seed: int
    mix: float = Field(description="share of the budget spread uniformly over the candidates")
    judges: list[str]
    made_at: datetime
    made_by: str | None
    n_labelled_before: int = Field(description="items labelled before the draw: in the estimate with π = 1")
    items: list[DrawItemOut] = Field(
        description="the draw's population: every candidate (the unlabelled items with a judge score), "
        "then the items labelled before the draw"
    )


def _draw_out(draw: ReviewDraw) -> dict:
    from annotator.judges.selectors.draws import draw_rows

    return {
        "id": draw.pk,
        "batch_id": draw.batch_id,
        "budget": draw.budget,
        "seed": draw.seed,
        "mix": draw.mix,
        "judges": draw.judges,
        "made_at": draw.made_at,
        "made_by": draw.made_by.get_username() if draw.made_by else None,
        "n_labelled_before": draw.rows.filter(labelled_before=True).count(),
        "items": draw_rows(draw),
    }


@router.get(
    "/batches/{int:batch_id}/review/draw",
    response={200: DrawOut, **ERRORS},
    auth=researchers,
    url_name="review_draw",
    summary="The batch's review draw in force (researchers)",
)
def review_draw_get(request, batch_id: int):
    batch = get_object_or_404(Batch, pk=batch_id)
    draw = draw_in_force(batch)
    if draw is None:
        raise Problem(404, f"Batch \u201c{batch.name}\u201d has no review draw in force.")
    return _draw_out(draw)


@router.post(
    "/batches/{int:batch_id}/review/draw",
    response={201: DrawOut, **ERRORS},
    auth=admins,
    url_name="review_draw_make",
    summary="Draw items for review with recorded probabilities (admins)",
)
def review_draw_post(request, batch_id: int, payload: DrawIn):
    """Draws each unlabelled item with a judge score with probability π ∝ its uncertainty (Σπ = budget),
    records π and the outcome, and puts the drawn items first in the queue; the report then weights their
    labels by 1/π. 409 when a draw is in force (DELETE it first); 422 for a budget outside 1 to the number of
    candidates, unknown judges or a batch without judge scores."""
    from annotator.judges.services.review import DrawError, review_draw_make

    batch = get_object_or_404(Batch, pk=batch_id)
    if draw_in_force(batch) is not None:
        raise Problem(
            409, f"Batch \u201c{batch.name}\u201d already has a review draw in force; DELETE it first."
        )
    try:
        draw = review_draw_make(
            batch=batch,
            budget=payload.budget,
            seed=payload.seed,
            judges=payload.judge or None,
            user=request.auth,
        )
    except DrawError as exc:
        raise Problem(422, str(exc), kind=INVALID_REQUEST) from None
    return Status(201, _draw_out(draw_in_force(batch) or draw))


@router.delete(
    "/batches/{int:batch_id}/review/draw",
    response={204: None, **ERRORS},
    auth=admins,
    url_name="review_draw_retire",
    summary="Retire the batch's review draw (admins); its record is kept",
)
def review_draw_delete(request, batch_id: int):
    from annotator.judges.services.review import review_draw_retire

    batch = get_object_or_404(Batch, pk=batch_id)
    if review_draw_retire(batch=batch) is None:
        raise Problem(404, f"Batch \u201c{batch.name}\u201d has no review draw in force.")
    return Status(204, None)
