"""A batch's frozen calibration set: read, mark, retire (researchers). The same services as its page."""

from __future__ import annotations

from datetime import datetime

from django.shortcuts import get_object_or_404
from ninja import Router, Schema
from ninja.responses import Status
from pydantic import Field

from annotator.api.auth import researchers
from annotator.api.problems import INVALID_REQUEST, Problem
from annotator.api.schemas import ERRORS
from annotator.judges.services.calibration_set import (
    CalibrationSetError,
    calibration_set_mark,
    calibration_set_retire,
)
from annotator.models import Batch, CalibrationSet

router = Router(tags=["judges"])


class CalibrationSetIn(Schema):
    """Either ``item_ids`` or ``sample`` (a seeded random sample of the batch's items)."""

    item_ids: list[str] | None = Field(None, max_length=100_000)
    sample: int | None = Field(None, ge=1)
    seed: int = Field(0, ge=0, le=2**31 - 1)
    note: str = Field("", max_length=1000)


class CalibrationSetOut(Schema):
    batch_id: int
    fingerprint: str = Field(description="sha256 of the sorted item ids, one per line")
    how: str
    note: str
    frozen_at: datetime
    marked_by: str | None
    item_ids: list[str]


def _out(chosen: CalibrationSet) -> dict:
    from annotator.judges.selectors.calibration_set import (
        set_item_ids,  # its module calibrates judges (numpy, scipy)
    )

    return {
        "batch_id": chosen.batch_id,
        "fingerprint": chosen.fingerprint,
        "how": chosen.how,
        "note": chosen.note,
        "frozen_at": chosen.frozen_at,
        "marked_by": chosen.marked_by.get_username() if chosen.marked_by else None,
        "item_ids": set_item_ids(chosen),
    }


@router.get(
    "/batches/{int:batch_id}/calibration-set",
    response={200: CalibrationSetOut, **ERRORS},
    auth=researchers,
    url_name="calibration_set",
    summary="The batch's frozen calibration set (researchers)",
)
def calibration_set_get(request, batch_id: int):
    batch = get_object_or_404(Batch, pk=batch_id)
    return _out(get_object_or_404(CalibrationSet.objects.select_related("marked_by"), batch=batch))


@router.put(
    "/batches/{int:batch_id}/calibration-set",
    response={201: CalibrationSetOut, **ERRORS},
    auth=researchers,
    url_name="calibration_set_mark",
    summary="Freeze the batch's calibration set (researchers)",
)
def calibration_set_put(request, batch_id: int, payload: CalibrationSetIn):
    """409 when the batch already has one (DELETE it first: a frozen set never changes); 422 for item ids
    not in the batch or a sample larger than it."""
    batch = get_object_or_404(Batch, pk=batch_id)
    if CalibrationSet.objects.filter(batch=batch).exists():
        raise Problem(
            409, f"Batch \u201c{batch.name}\u201d already has a frozen calibration set; DELETE it first."
        )
    try:
        chosen = calibration_set_mark(
            batch=batch,
            item_ids=payload.item_ids,
            sample=payload.sample,
            seed=payload.seed,
            note=payload.note,
            user=request.auth,
        )
    except CalibrationSetError as exc:
        raise Problem(422, str(exc), kind=INVALID_REQUEST) from None
    return Status(201, _out(chosen))


@router.delete(
    "/batches/{int:batch_id}/calibration-set",
    response={204: None, **ERRORS},
    auth=researchers,
    url_name="calibration_set_retire",
    summary="Retire the batch's calibration set (researchers)",
)
def calibration_set_delete(request, batch_id: int):
    batch = get_object_or_404(Batch, pk=batch_id)
    if not calibration_set_retire(batch=batch):
        raise Problem(404, f"Batch \u201c{batch.name}\u201d has no calibration set.")
    return Status(204, None)
