"""Writes of the judge feature."""

from __future__ import annotations

from django.db import transaction
from django.db.models import F

from annotator.models import Batch, Item


@transaction.atomic
def items_queue_first(*, batch: Batch, item_ids: list[str]) -> int:
    """Put ``item_ids`` first in ``batch``'s queue, in the order given; returns how many moved.

    The lease hands out items closest to completion first and, within that, by ``position``; the chosen
    items take positions 0, 1, … and every other item moves down by as many, keeping its order.
    Unknown ids raise ValueError and change nothing."""
    ids = list(dict.fromkeys(item_ids))
    found = dict(
        Item.objects.select_for_update().filter(batch=batch, item_id__in=ids).values_list("item_id", "pk")
    )
    missing = [i for i in ids if i not in found]
    if missing:
        raise ValueError(
            f"{len(missing)} item id(s) are not in batch {batch.name!r}: {', '.join(missing[:5])}"
        )
    Item.objects.filter(batch=batch).exclude(pk__in=found.values()).update(position=F("position") + len(ids))
    for position, item_id in enumerate(ids):
        Item.objects.filter(pk=found[item_id]).update(position=position)
    return len(ids)
