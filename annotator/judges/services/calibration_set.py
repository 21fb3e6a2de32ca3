"""Marking and retiring a batch's frozen calibration set (the items judge versions are compared on)."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence

from django.db import IntegrityError, transaction

from annotator.counted import counted
from annotator.models import Batch, CalibrationSet, Item

MAX_LISTED = 10


class CalibrationSetError(ValueError):
    """Why a calibration set cannot be marked as asked (nothing was saved)."""


def fingerprint(item_ids: Sequence[str]) -> str:
    """sha256 of the sorted item ids, one per line: the same items give the same fingerprint anywhere."""
    return hashlib.sha256("\n".join(sorted(item_ids)).encode()).hexdigest()


def _chosen(
    batch: Batch, item_ids: Sequence[str] | None, sample: int | None, seed: int
) -> tuple[list[Item], str]:
    if (item_ids is None) == (sample is None):
        raise CalibrationSetError("give either the item ids or a sample size, not both.")
    items = list(Item.objects.filter(batch=batch).order_by("position", "id").only("pk", "item_id"))
    if sample is not None:
        if not 1 <= sample <= len(items):
            raise CalibrationSetError(
                f"the sample size must be between 1 and {len(items)} (the batch's items)."
            )
        return random.Random(seed).sample(items, sample), f"random sample of {sample}, seed {seed}"
    wanted = list(dict.fromkeys(i.strip() for i in item_ids if i.strip()))
    if not wanted:
        raise CalibrationSetError("no item ids were given.")
    by_id = {item.item_id: item for item in items}
    unknown = [i for i in wanted if i not in by_id]
    if unknown:
        shown = ", ".join(f"\u201c{i}\u201d" for i in unknown[:MAX_LISTED])
        more = f" and {len(unknown) - MAX_LISTED} more" if len(unknown) > MAX_LISTED else ""
        raise CalibrationSetError(
            f"{counted(len(unknown), 'item id', 'item ids')} {'is' if len(unknown) == 1 else 'are'} not in batch \u201c{batch.name}\u201d: {shown}{more}."
        )
    return [by_id[i] for i in wanted], f"{counted(len(wanted), 'item', 'items')} chosen by id"


def calibration_set_mark(
    *,
    batch: Batch,
    item_ids: Sequence[str] | None = None,
    sample: int | None = None,
    seed: int = 0,
    note: str = "",
    user=None,
) -> CalibrationSet:
    """Freeze the batch's calibration set: the listed items, or a seeded random sample of them.

    Raises CalibrationSetError when the batch already has one (retire it first), when an id is not
    in the batch, or when the sample size does not fit; nothing is saved then.
    """
    existing = CalibrationSet.objects.filter(batch=batch).first()
    if existing is not None:
        raise CalibrationSetError(
            f"batch \u201c{batch.name}\u201d already has a frozen calibration set (#{existing.fingerprint[:12]}, "
            f"marked {existing.frozen_at:%Y-%m-%d %H:%M} UTC); retire it before marking another."
        )
    if "\x00" in note:  # PostgreSQL stores no NUL in text
        raise CalibrationSetError("the note contains a NUL character; remove it and send the note again.")
    items, how = _chosen(batch, item_ids, sample, seed)
    try:
        with transaction.atomic():
            chosen = CalibrationSet.objects.create(
                batch=batch,
                fingerprint=fingerprint([i.item_id for i in items]),
                how=how,
                note=note.strip(),
                marked_by=user if user is not None and user.is_authenticated else None,
            )
            chosen.items.add(*items)
    except IntegrityError:
        raise CalibrationSetError(
            f"batch \u201c{batch.name}\u201d got a calibration set from someone else meanwhile; reload to see it."
        ) from None
    return chosen


def calibration_set_retire(*, batch: Batch) -> bool:
    """Remove the batch's calibration set (judge scores stay); False when it had none."""
    deleted, _ = CalibrationSet.objects.filter(batch=batch).delete()
    return bool(deleted)
