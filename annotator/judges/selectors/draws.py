"""A batch's review draw in force, read for the report and the review page (``annotator.judges.models.review_draw``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from django.db.models import Count, Q

from annotator.models import Annotation, Batch, ReviewDraw, ReviewDrawItem

if TYPE_CHECKING:  # numpy is imported where the report's arrays are read: the API and pages load this module
    import numpy as np

DRAW_COLUMNS = ("item_id", "system_id", "pi", "drawn", "labelled_before", "uncertainty")


@dataclass(frozen=True)
class DrawDesign:
    """The draw on the report's item rows: π (NaN outside the draw's population) and whether each item was
    selected (drawn, or labelled before the draw and so in with π = 1)."""

    draw_id: int
    budget: int
    seed: int
    made_at: datetime
    pi: np.ndarray
    selected: np.ndarray
    before: np.ndarray


def draw_in_force(batch: Batch) -> ReviewDraw | None:
    return ReviewDraw.objects.filter(ReviewDraw.IN_FORCE, batch=batch).select_related("made_by").first()


def draw_design(batch: Batch, item_pk: np.ndarray) -> DrawDesign | None:
    """The draw in force on the item rows ``item_pk`` (the report's arrays), or None without one."""
    import numpy as np

    draw = draw_in_force(batch)
    if draw is None:
        return None
    row_of_pk = {int(pk): row for row, pk in enumerate(item_pk)}
    pi = np.full(len(item_pk), np.nan)
    selected = np.zeros(len(item_pk), dtype=bool)
    before = np.zeros(len(item_pk), dtype=bool)
    for item, p, drawn, was_labelled in draw.rows.values_list("item", "pi", "drawn", "labelled_before"):
        row = row_of_pk.get(item)
        if row is not None:
            pi[row], selected[row], before[row] = p, drawn, was_labelled
    return DrawDesign(draw.pk, draw.budget, draw.seed, draw.made_at, pi, selected, before)


@dataclass(frozen=True)
class DrawSummary:
    draw: ReviewDraw
    n_candidates: int
    n_drawn: int
    n_drawn_annotated: int  # drawn items with at least one annotation so far
    n_labelled_before: int


def draw_summary(batch: Batch) -> DrawSummary | None:
    """Counts for the review page: how far the people are with the draw in force."""
    draw = draw_in_force(batch)
    if draw is None:
        return None
    counts = draw.rows.aggregate(
        candidates=Count("pk", filter=Q(labelled_before=False)),
        drawn=Count("pk", filter=Q(labelled_before=False, drawn=True)),
        before=Count("pk", filter=Q(labelled_before=True)),
    )
    drawn_items = draw.rows.filter(labelled_before=False, drawn=True).values("item")
    annotated = Annotation.objects.filter(item__in=drawn_items).values("item").distinct().count()
    return DrawSummary(draw, counts["candidates"], counts["drawn"], annotated, counts["before"])


def draw_rows(draw: ReviewDraw) -> list[dict]:
    """The draw's population: its candidates, then the items labelled before it (π = 1,
    ``labelled_before`` 1), each in the order items were added."""
    rows = (
        ReviewDrawItem.objects.filter(draw=draw)
        # item_id, the column: "item" would follow Item's ordering, which the queue changes
        .order_by("labelled_before", "item_id")
        .values_list("item__item_id", "item__system_id", "pi", "drawn", "labelled_before", "uncertainty")
    )
    return [dict(zip(DRAW_COLUMNS, r)) for r in rows]
