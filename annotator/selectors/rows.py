"""Model instances from rows of hand-written SQL, converted exactly as the ORM converts them.

For the few reads that run on every request, where building the ORM query costs more than
running it (the session with its user, the item or batch a rating request names).
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import connection, models


def columns(model: type[models.Model], alias: str) -> str:
    """``alias.col, ...`` for every concrete field of ``model``, in ``_meta`` order."""
    qn = connection.ops.quote_name
    return ", ".join(f"{alias}.{qn(f.column)}" for f in model._meta.concrete_fields)


def python_values(model: type[models.Model], fields: Sequence[models.Field], row: Sequence) -> list:
    """Database values to Python ones, as the ORM converts them (dates on SQLite, JSON)."""
    values = []
    for field, value in zip(fields, row, strict=True):
        col = field.get_col(model._meta.db_table)
        for converter in connection.ops.get_db_converters(col) + col.get_db_converters(connection):
            value = converter(value, col, connection)
        values.append(value)
    return values


def instance_from_row(model: type[models.Model], row: Sequence) -> models.Model:
    """The instance ``model.from_db`` builds from ``row`` (values in ``columns`` order)."""
    fields = model._meta.concrete_fields
    return model.from_db(connection.alias, [f.attname for f in fields], python_values(model, fields, row))
