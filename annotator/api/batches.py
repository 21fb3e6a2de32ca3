"""Batches: create one from JSON or JSONL items, add items to an open one, list them, read progress.

Creating and adding take the same columns and run the same checks as the upload page (the items
become a JSONL file for ``annotator.uploads.files.batch_file``); any bad item refuses the whole request
with every problem and its row (row n = the n-th item). Large requests are saved by the
background worker: 202 and a job to poll.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings
from django.db.models import Count
from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from ninja import Query, Router, Schema
from ninja.responses import Status
from pydantic import Field

from annotator.api.auth import admins, researchers
from annotator.api.items import FILENAME, ItemsIn
from annotator.api.pagination import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    decode_cursor,
    encode_cursor,
    next_link,
)
from annotator.api.problems import BATCH_CLOSED, INVALID_REQUEST, Problem
from annotator.api.schemas import ERRORS, JobOut, accepted
from annotator.models import Batch
from annotator.rating.selectors.batch_progress import batch_progress
from annotator.services.jobs import upload_job_create
from annotator.uploads.files.checks import MIN_K, rubric_from_data
from annotator.uploads.files.errors import ImportRefused
from annotator.uploads.forms import BATCH
from hcs.rubric import Rubric

router = Router(tags=["batches"])


class BatchCreateIn(ItemsIn):
    name: str = Field(description="unique batch name")
    k: int = Field(MIN_K, description="independent annotations per item (at least 3)")
    rubric: dict[str, Any] | None = Field(
        None, description="a rubric of the schema of hcs/rubrics/hcs.json; default HCS"
    )


class BatchOut(Schema):
    id: int
    name: str
    k: int
    is_open: bool
    n_items: int
    created_at: datetime
    url: str
    progress_url: str
    annotations_url: str
    report_url: str


class BatchPage(Schema):
    items: list[BatchOut]
    next_cursor: str | None
    next: str | None


class ItemsAddedOut(Schema):
    batch: BatchOut
    added: int


class ProgressOut(Schema):
    batch_id: int
    name: str
    is_open: bool
    k: int
    n_items: int
    items_complete: int = Field(description="items with k submitted annotations")
    items_leased: int = Field(description="items with no free slot, waiting on annotators who hold them")
    items_open: int = Field(description="items with a free slot")
    annotations_submitted: int
    annotations_needed: int = Field(description="n_items × k")
    percent_complete: float = Field(description="items complete, 0–100")
    done: bool


def batch_out(request, batch: Batch, n_items: int | None = None) -> dict:
    def url(name: str) -> str:
        return request.build_absolute_uri(reverse(f"api-v1:{name}", kwargs={"batch_id": batch.pk}))

    return {
        "id": batch.pk,
        "name": batch.name,
        "k": batch.k,
        "is_open": batch.is_open,
        "n_items": batch.items.count() if n_items is None else n_items,
        "created_at": batch.created_at,
        "url": url("batch"),
        "progress_url": url("batch_progress"),
        "annotations_url": url("annotations"),
        "report_url": url("report"),
    }


def _in_background(data: bytes) -> bool:
    return len(data) > settings.ANNOTATOR_BACKGROUND_UPLOAD_BYTES


@router.post(
    "/batches",
    response={201: BatchOut, 202: JobOut, **ERRORS},
    auth=admins,
    url_name="batches_create",
    summary="Create a batch from JSON or JSONL items (admins)",
)
def batch_create(request, payload: BatchCreateIn, response: HttpResponse):
    """All or nothing: any bad item (or a taken name, k < 3) saves nothing and lists every problem
    with its row (the item's 1-based position, or its JSONL line). Over
    ``ANNOTATOR_BACKGROUND_UPLOAD_KB`` of items: 202 with a job to poll."""
    # The parser and the import service: imported by the endpoints that take items.
    from annotator.uploads.files.batch_file import parse_batch_file
    from annotator.uploads.services.batches import batch_import, batch_settings_errors

    try:
        rubric = rubric_from_data(payload.rubric) if payload.rubric is not None else Rubric.default()
    except ValueError as exc:
        raise Problem(422, str(exc), kind=INVALID_REQUEST) from None
    data = payload.jsonl_bytes()
    if _in_background(data):
        errors = batch_settings_errors(
            name=payload.name, k=payload.k, rubric=rubric
        )  # known now; the rows are checked by the worker
        if errors:
            raise ImportRefused(errors)
        pending = {
            "mode": BATCH,
            "filename": FILENAME,
            "name": payload.name,
            "k": payload.k,
            "rubric": payload.rubric,
        }
        return accepted(request, response, upload_job_create(pending=pending, data=data, user=request.user))
    parsed = parse_batch_file(data, filename=FILENAME)
    batch = batch_import(
        name=payload.name, k=payload.k, rubric=rubric, parsed=parsed, created_by=request.user
    )
    body = batch_out(request, batch, n_items=parsed.row_count)
    response["Location"] = body["url"]
    return Status(201, body)


@router.post(
    "/batches/{int:batch_id}/items",
    response={201: ItemsAddedOut, 202: JobOut, **ERRORS},
    auth=admins,
    url_name="batch_items",
    summary="Add items to an open batch (admins)",
)
def batch_items(request, batch_id: int, payload: ItemsIn, response: HttpResponse):
    """The same columns and checks as creating a batch; an item id already in the batch is a row
    error too. A closed batch answers 409."""
    from annotator.uploads.files.batch_file import (
        parse_batch_file,  # imported here, as in batch_create
    )
    from annotator.uploads.services.batches import BatchClosed, batch_items_add
    from annotator.uploads.services.confirm import ITEMS

    batch = get_object_or_404(Batch, pk=batch_id)
    data = payload.jsonl_bytes()
    try:
        if _in_background(data):
            if not batch.is_open:
                raise BatchClosed(batch)
            pending = {"mode": ITEMS, "filename": FILENAME, "name": batch.name, "batch_id": batch.pk}
            return accepted(
                request, response, upload_job_create(pending=pending, data=data, user=request.user)
            )
        parsed = parse_batch_file(data, filename=FILENAME)
        added = batch_items_add(batch=batch, parsed=parsed)
    except BatchClosed as exc:
        raise Problem(409, str(exc), kind=BATCH_CLOSED) from None
    return Status(201, {"batch": batch_out(request, batch), "added": added})


@router.get(
    "/batches",
    response={200: BatchPage, **ERRORS},
    auth=researchers,
    url_name="batches",
    summary="List batches, oldest first (researchers)",
)
def batches(request, cursor: str | None = None, limit: int = Query(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT)):
    after = decode_cursor(cursor, (int,))
    rows = Batch.objects.annotate(n=Count("items")).order_by("pk")
    if after:
        rows = rows.filter(pk__gt=after[0])
    page = list(rows[: limit + 1])
    more = len(page) > limit
    page = page[:limit]
    next_cursor = encode_cursor([page[-1].pk]) if more else None
    return {
        "items": [batch_out(request, b, n_items=b.n) for b in page],
        "next_cursor": next_cursor,
        "next": next_link(request, next_cursor),
    }


@router.get(
    "/batches/{int:batch_id}",
    response={200: BatchOut, **ERRORS},
    auth=researchers,
    url_name="batch",
    summary="One batch (researchers)",
)
def batch(request, batch_id: int):
    return batch_out(request, get_object_or_404(Batch, pk=batch_id))


@router.get(
    "/batches/{int:batch_id}/progress",
    response={200: ProgressOut, **ERRORS},
    auth=researchers,
    url_name="batch_progress",
    summary="How far annotation of a batch has come (researchers)",
)
def progress(request, batch_id: int):
    p = batch_progress(batch=get_object_or_404(Batch, pk=batch_id))
    return {**p.__dict__, "percent_complete": p.percent_complete, "done": p.done}
