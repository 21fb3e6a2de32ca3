"""Model instances from rows of hand-written SQL, converted exactly as the ORM converts them.

For the few reads that run on every request, where building the ORM query costs more than
running it (the session with its user, the item or batch a rating request names), and for the
long reads of the exports, whose columns repeat values worth converting once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from django.db import connection, models

from annotator.db_private import field_converters, register_timestamptz_loader


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
            found.append(field_converters(model, field))
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


def converter(model: type[models.Model], name: str) -> Callable[[Any], Any]:
    """Database value → Python value for the column of ``model``'s field ``name``, as the ORM converts it."""
    ((col, converters),) = _converters_of(model, [model._meta.get_field(name)])

    def convert(value: Any) -> Any:
        for conv in converters:
            value = conv(value, col, connection)
        return value

    return convert


def instance_from_row(model: type[models.Model], row: Sequence) -> models.Model:
    """The instance ``model.from_db`` builds from ``row`` (values in ``columns`` order)."""
    fields = model._meta.concrete_fields
    return model.from_db(connection.alias, [f.attname for f in fields], python_values(model, fields, row))


@contextmanager
def chunked_cursor() -> Iterator[Any]:
    """``connection.chunked_cursor()`` for long reads (server-side on PostgreSQL: memory stays one
    fetch). On PostgreSQL its timestamps come back as Django's loader gives them, but parsed by
    psycopg's compiled loader (``annotator.db_private.register_timestamptz_loader``)."""
    # A deployment behind a transaction-mode pooler turns server-side cursors off (as .iterator() obeys).
    server_side = not connection.settings_dict.get("DISABLE_SERVER_SIDE_CURSORS")
    with connection.chunked_cursor() if server_side else connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            from django.db.backends.postgresql.psycopg_any import is_psycopg3

            if is_psycopg3:
                register_timestamptz_loader(cursor, connection.timezone)
        yield cursor
