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


_converters: dict[tuple, list] = {}


def _converters_of(model: type[models.Model], fields: Sequence[models.Field]) -> list:
    """Per field, its column and the converters the ORM applies to it; looked up once per process
    and field list (finding them cost more than applying them)."""
    key = (connection.vendor, model, tuple(fields))
    found = _converters.get(key)
    if found is None:
        found = []
        for field in fields:
            col = field.get_col(model._meta.db_table)
            found.append((col, connection.ops.get_db_converters(col) + col.get_db_converters(connection)))
        _converters[key] = found
    return found


def python_values(model: type[models.Model], fields: Sequence[models.Field], row: Sequence) -> list:
    """Database values to Python ones, as the ORM converts them (dates on SQLite, JSON)."""
    values = []
    for (col, converters), value in zip(_converters_of(model, fields), row, strict=True):
        for converter in converters:
            value = converter(value, col, connection)
        values.append(value)
    return values


def instance_from_row(model: type[models.Model], row: Sequence) -> models.Model:
    """The instance ``model.from_db`` builds from ``row`` (values in ``columns`` order)."""
    fields = model._meta.concrete_fields
    return model.from_db(connection.alias, [f.attname for f in fields], python_values(model, fields, row))
