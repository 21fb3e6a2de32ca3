"""Item-level judge data over the HTTP API, a page at a time (researchers): the rows of the
``judge_scores.csv`` and ``pairwise_verdicts.csv`` exports, with a cursor."""

from __future__ import annotations

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
from annotator.api.problems import BAD_CURSOR, Problem
from annotator.api.schemas import ERRORS
from annotator.judges.exports.tables import judge_score_rows, pairwise_verdict_rows
from annotator.models import Batch

router = Router(tags=["judges"])


class JudgeScoreRowOut(BaseModel):
    item_id: str
    system_id: str
    judge: str
    judge_version: str
    dimension: str
    raw_value: float | None
    value: float | None
    reason: str
    model: str
    provider: str
    template_hash: str
    sample: int
    call_status: str
    prompt_id: str
    scale_min: float | None
    scale_max: float | None
    higher_is_better: bool | None
    logprob_score: float | None = (
        None  # G-Eval: the probability-weighted score, when the run asked for logprobs
    )
    confidence: float | None = None  # the probability of the most likely score token


class JudgeScorePage(BaseModel):
    items: list[JudgeScoreRowOut]
    next_cursor: str | None
    next: str | None


class PairwiseVerdictRowOut(BaseModel):
    prompt_id: str
    baseline_system: str
    enhanced_system: str
    order_sent: str
    winner: str
    confidence: float | None
    criteria: dict[str, float]
    judge: str
    judge_version: str
    baseline_item_id: str
    enhanced_item_id: str
    winner_shown: str
    baseline_score: float | None
    enhanced_score: float | None
    reason: str
    model: str
    provider: str
    template_hash: str
    call_status: str


class PairwiseVerdictPage(BaseModel):
    items: list[PairwiseVerdictRowOut]
    next_cursor: str | None
    next: str | None


def _page(request, rows, limit: int, cursor_of) -> dict:
    """``limit`` rows of ``rows`` (cursor, row) and the link to the next page. A source row may give several
    rows (a call of --samples gives one per dimension): a page ends after a whole source row."""
    items, cursors = [], []
    for cursor, row in rows:
        if not cursors or cursors[-1] != cursor:
            cursors.append(cursor)
        if len(cursors) > limit:
            break
        items.append(row)
    next_cursor = encode_cursor(cursor_of(cursors[limit - 1])) if len(cursors) > limit else None
    return {"items": items, "next_cursor": next_cursor, "next": next_link(request, next_cursor)}


@router.get(
    "/batches/{int:batch_id}/judge-scores",
    response={200: JudgeScorePage, **ERRORS},
    auth=researchers,
    url_name="batch_judge_scores",
    summary="Judge scores of a batch per item, dimension and sample, cursor-paginated (researchers)",
)
def batch_judge_scores(
    request,
    batch_id: int,
    cursor: str | None = None,
    limit: int = Query(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT, description="scores (or repeat calls) per page"),
):
    batch = get_object_or_404(Batch, pk=batch_id)
    after = decode_cursor(cursor, (int, int))
    if after is not None and after[0] not in (0, 1):  # a cursor this API gave out names part 0 or 1
        raise Problem(
            400, "The cursor is not one this API gave out; start again without it.", kind=BAD_CURSOR
        )
    rows = judge_score_rows(batch=batch, after=tuple(after) if after else None, limit=limit + 1)
    return _page(request, rows, limit, list)


@router.get(
    "/batches/{int:batch_id}/pairwise-verdicts",
    response={200: PairwiseVerdictPage, **ERRORS},
    auth=researchers,
    url_name="batch_pairwise_verdicts",
    summary="Pairwise verdicts of a batch with their criterion scores, cursor-paginated (researchers)",
)
def batch_pairwise_verdicts(
    request,
    batch_id: int,
    cursor: str | None = None,
    limit: int = Query(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT, description="verdicts per page"),
):
    batch = get_object_or_404(Batch, pk=batch_id)
    after = decode_cursor(cursor, (int,))
    rows = pairwise_verdict_rows(batch=batch, after=after[0] if after else None, limit=limit + 1)
    return _page(request, rows, limit, lambda pk: [pk])
