"""A new batch from a JSONL of traces and a field mapping (parsed by ``judges.imports.trace_file``)."""

from __future__ import annotations

from collections.abc import Mapping

from django.db import transaction

from annotator.judges.imports.trace_file import PathError, parse_mapping, parse_trace_file
from annotator.models import Batch
from annotator.uploads.files.errors import ImportRefused
from annotator.uploads.services.batches import batch_import
from hcs.rubric import Rubric


@transaction.atomic
def batch_import_traces(
    *,
    data: bytes,
    mapping: str | Mapping[str, str],
    name: str,
    k: int,
    rubric: Rubric,
    created_by=None,
) -> Batch:
    """A new batch with one item per trace (or per thread). All or nothing.

    Raises ``ImportRefused`` for a bad mapping, a path that does not resolve (line and path named) or an
    item the batch checks refuse; ``FileRefused`` for an unreadable file.
    """
    try:
        paths = parse_mapping(mapping)
    except PathError as exc:
        raise ImportRefused([str(exc)]) from None
    parsed = parse_trace_file(data, mapping=paths)
    return batch_import(name=name, k=k, rubric=rubric, parsed=parsed, created_by=created_by)
