"""Fast inserts of many items: PostgreSQL COPY, one executemany on SQLite, bulk_create elsewhere.

Rows arrive already validated (``annotator.imports``); these functions only move them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

import pandas as pd
from django.db import connection

from annotator.imports.batch_file import OUTPUT_COLUMNS
from annotator.models import Item

_JSON_FIELDS = ("constraints", "conversation", "metadata")


def _other_fields() -> list:
    """Item's other concrete fields (counters and anything added later), written as their defaults."""
    given = {"id", "batch", *OUTPUT_COLUMNS}
    return [f for f in Item._meta.concrete_fields if f.name not in given]


def _columns() -> list[str]:
    names = [Item._meta.get_field(name).column for name in ("batch", *OUTPUT_COLUMNS)]
    return names + [f.column for f in _other_fields()]


def _rows(batch_id: int, frame: pd.DataFrame, start_position: int) -> Iterable[Sequence]:
    values = [frame[name].tolist() for name in OUTPUT_COLUMNS]
    position_index = OUTPUT_COLUMNS.index("position")
    values[position_index] = range(start_position, start_position + len(frame))
    n = len(frame)
    defaults = [[f.get_db_prep_save(f.get_default(), connection)] * n for f in _other_fields()]
    return zip([batch_id] * n, *values, *defaults)


def items_insert(*, batch_id: int, frame: pd.DataFrame, start_position: int = 0) -> int:
    """Insert ``frame`` (the columns of ``OUTPUT_COLUMNS``, JSON fields as text) into one batch.

    Call inside a transaction. Returns the number of rows written.
    """
    if frame.empty:
        return 0
    table = connection.ops.quote_name(Item._meta.db_table)
    columns = _columns()
    quoted = ", ".join(connection.ops.quote_name(c) for c in columns)
    rows = _rows(batch_id, frame, start_position)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            with cursor.cursor.copy(f"COPY {table} ({quoted}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
    elif connection.vendor == "sqlite":
        placeholders = ", ".join(["%s"] * len(columns))
        with connection.cursor() as cursor:
            cursor.executemany(f"INSERT INTO {table} ({quoted}) VALUES ({placeholders})", list(rows))
    else:  # other databases: the ORM's bulk insert
        names = ("batch_id", *OUTPUT_COLUMNS)
        objects = []
        for row in rows:
            fields = dict(zip(names, row[: len(names)]))
            for key in _JSON_FIELDS:
                fields[key] = json.loads(fields[key])
            objects.append(Item(**fields))
        Item.objects.bulk_create(objects, batch_size=2000)
    return len(frame)
