"""Inserting a batch's items in bulk, in their queue order (``annotator.services.bulk`` moves the rows)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.db.models import Max

from annotator.models import Batch, Item
from annotator.rating.services.queue_order import queue_ranks
from annotator.services.bulk import rows_insert
from annotator.uploads.files.batch_file import OUTPUT_COLUMNS
from annotator.uploads.files.columns import Frame


def _item_rows(
    batch_id: int, frame: Frame, start_position: int, extra: Sequence[str], order_seed: int | None
) -> Iterable[Sequence]:
    values = [frame[name].tolist() for name in (*OUTPUT_COLUMNS, *extra)]
    position_index = OUTPUT_COLUMNS.index("position")
    values[position_index] = positions = range(start_position, start_position + len(frame))
    ranks = queue_ranks(order_seed, values[OUTPUT_COLUMNS.index("item_id")], positions)
    return zip([batch_id] * len(frame), *values, ranks)


def next_position(*, batch_id: int) -> int:
    """The position after the batch's last item (new items go after the ones it has)."""
    last = Item.objects.filter(batch_id=batch_id).aggregate(m=Max("position"))["m"]
    return 0 if last is None else last + 1


# Item columns a frame may carry besides OUTPUT_COLUMNS: the primary key (from ``ids_reserve``) and,
# for items that arrive with their annotations, the count of those.
ITEM_EXTRA_COLUMNS = ("id", "n_annotations")


def items_insert(*, batch_id: int, frame: Frame, start_position: int = 0) -> int:
    """Insert ``frame`` (the columns of ``OUTPUT_COLUMNS``, JSON fields as text, and any of
    ``ITEM_EXTRA_COLUMNS``) into one batch.

    Call inside a transaction. Returns the number of rows written.
    """
    if frame.empty:
        return 0
    extra = [name for name in ITEM_EXTRA_COLUMNS if name in frame.columns]
    order_seed = Batch.objects.values_list("order_seed", flat=True).get(pk=batch_id)
    rows_insert(
        model=Item,
        fields=("batch", *OUTPUT_COLUMNS, *extra, "queue_rank"),
        rows=_item_rows(batch_id, frame, start_position, extra, order_seed),
    )
    return len(frame)
