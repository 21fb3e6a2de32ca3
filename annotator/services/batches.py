"""Creating batches and importing batch files, all or nothing."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from annotator.imports.batch_file import ParsedBatch, parse_batch_file
from annotator.imports.checks import k_errors, name_errors
from annotator.imports.errors import ImportRefused, RowError
from annotator.models import Batch
from annotator.services.bulk import items_insert
from hcs.rubric import Rubric


def batch_settings_errors(*, name: str, k: int | None) -> list[RowError]:
    """Why ``name`` and ``k`` cannot make a new batch (empty when they can). Reads the database."""
    errors = name_errors(name)
    if not errors and Batch.objects.filter(name=name.strip()).exists():
        errors.append(RowError(None, None, f"A batch named \u201c{name.strip()}\u201d already exists; choose another name."))
    return errors + k_errors(k)


@transaction.atomic
def batch_create(*, name: str, k: int, rubric: Rubric, created_by=None) -> Batch:
    """A new empty batch. Raises ``ImportRefused`` for a taken name or k < 3."""
    errors = batch_settings_errors(name=name, k=k)
    if errors:
        raise ImportRefused(errors)
    try:
        with transaction.atomic():
            return Batch.objects.create(name=name.strip(), k=k, rubric=rubric.to_dict(), created_by=created_by)
    except IntegrityError:
        if not Batch.objects.filter(name=name.strip()).exists():
            raise
        # Another request took the name between the check and the insert.
        raise ImportRefused([f"A batch named \u201c{name.strip()}\u201d already exists; choose another name."]) from None


@transaction.atomic
def batch_import(*, name: str, k: int, rubric: Rubric, parsed: ParsedBatch, created_by=None) -> Batch:
    """Create the batch and every item of ``parsed`` in one transaction; nothing if anything is wrong."""
    errors = batch_settings_errors(name=name, k=k) + list(parsed.errors)
    if not errors and parsed.row_count == 0:
        errors.append(RowError(None, None, "The file has no items."))
    if errors:
        raise ImportRefused(errors)
    batch = batch_create(name=name, k=k, rubric=rubric, created_by=created_by)
    items_insert(batch_id=batch.pk, frame=parsed.rows)
    return batch


def batch_import_file(
    *,
    data: bytes,
    filename: str,
    name: str,
    k: int,
    rubric: Rubric,
    created_by=None,
    max_bytes: int | None = None,
) -> Batch:
    """Parse and import a batch file: the path the upload page, the command and the benchmark share.

    Raises ``FileRefused`` for an unreadable file and ``ImportRefused`` for bad rows or settings.
    """
    parsed = parse_batch_file(data, filename=filename, max_bytes=max_bytes)
    return batch_import(name=name, k=k, rubric=rubric, parsed=parsed, created_by=created_by)
