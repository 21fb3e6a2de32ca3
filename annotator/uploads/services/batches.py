"""Creating batches and importing batch files, all or nothing."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from annotator.models import Batch, Item
from annotator.quality.services.gold import gold_items_create
from annotator.rating.services.queue_order import new_order_seed
from annotator.services.bulk import analyze_after_commit
from annotator.uploads.files.batch_file import ParsedBatch, parse_batch_file
from annotator.uploads.files.errors import ImportRefused, RowError
from annotator.uploads.memory import gc_paused
from annotator.uploads.selectors.plans import batch_file_errors, batch_settings_errors
from annotator.uploads.services.items import items_insert, next_position
from hcs.rubric import Rubric


@transaction.atomic
def batch_create(*, name: str, k: int, rubric: Rubric, created_by=None) -> Batch:
    """A new empty batch, its queue in a random order of its own seed (``services.queue_order``).
    Raises ``ImportRefused`` for a taken name or k < 3."""
    errors = batch_settings_errors(name=name, k=k, rubric=rubric)
    if errors:
        raise ImportRefused(errors)
    try:
        with transaction.atomic():
            return Batch.objects.create(
                name=name.strip(),
                k=k,
                rubric=rubric.to_dict(),
                created_by=created_by,
                order_seed=new_order_seed(),
            )
    except IntegrityError:
        if not Batch.objects.filter(name=name.strip()).exists():
            raise
        # Another request took the name between the check and the insert.
        raise ImportRefused(
            [f"A batch named \u201c{name.strip()}\u201d already exists; choose another name."]
        ) from None


@transaction.atomic
def batch_import(*, name: str, k: int, rubric: Rubric, parsed: ParsedBatch, created_by=None) -> Batch:
    """Create the batch and every item of ``parsed`` in one transaction; nothing if anything is wrong."""
    errors = batch_file_errors(name=name, k=k, rubric=rubric, parsed=parsed)
    if errors:
        raise ImportRefused(errors)
    if not errors and parsed.rows.empty:
        errors.append(RowError(None, None, "The file has only gold items; it needs items to rate too."))
    if errors:
        raise ImportRefused(errors)
    batch = batch_create(name=name, k=k, rubric=rubric, created_by=created_by)
    items_insert(batch_id=batch.pk, frame=parsed.rows)
    if parsed.gold:
        gold_items_create(batch=batch, gold=parsed.gold, frame=parsed.gold_frame)
    analyze_after_commit(Item)
    return batch


class BatchClosed(ImportRefused):
    """The batch is closed: it takes no new items."""

    def __init__(self, batch: Batch):
        super().__init__([f"The batch \u201c{batch.name}\u201d is closed; it takes no new items."])


@transaction.atomic
def batch_items_add(*, batch: Batch, parsed: ParsedBatch) -> int:
    """Add every item of ``parsed`` to an open batch, after its last item; nothing if anything is wrong.

    Item ids already in the batch are row errors, like duplicates within the file.
    """
    batch = Batch.objects.select_for_update().get(pk=batch.pk)  # one writer at a time: positions follow on
    if not batch.is_open:
        raise BatchClosed(batch)
    errors = list(parsed.errors)
    if not errors and parsed.row_count == 0:
        errors.append(RowError(None, None, "The file has no items."))
    if not errors:
        ids = parsed.rows["item_id"].tolist()
        taken = set(Item.objects.filter(batch=batch).values_list("item_id", flat=True))  # no huge IN list
        errors.extend(
            RowError(row, "item_id", f"`{item_id}` is already in the batch", parsed.unit)
            for item_id, row in zip(ids, parsed.row_numbers)
            if item_id in taken
        )
    if errors:
        raise ImportRefused(errors)
    added = items_insert(
        batch_id=batch.pk, frame=parsed.rows, start_position=next_position(batch_id=batch.pk)
    )
    analyze_after_commit(Item)
    return added


@gc_paused()  # reading a file makes many objects and no cycles
def batch_import_file(
    *,
    data: bytes,
    filename: str,
    name: str,
    k: int,
    rubric: Rubric,
    created_by=None,
) -> Batch:
    """Parse and import a batch file: the path the upload page, the command and the benchmark share.

    Raises ``FileRefused`` for an unreadable file and ``ImportRefused`` for bad rows or settings.
    """
    parsed = parse_batch_file(data, filename=filename, rubric=rubric)
    return batch_import(name=name, k=k, rubric=rubric, parsed=parsed, created_by=created_by)
