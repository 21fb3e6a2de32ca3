"""Every use of Django's and psycopg's private internals, in one module.

These are not public APIs: an upgrade may change them without notice.
``tests/annotator/test_db_private.py`` pins the versions they were written for (``WRITTEN_FOR``)
and exercises each one, so an upgrade fails there first, with this module to read.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import tzinfo
from functools import cache
from typing import Any

from django.db import connection, models
from django.db.backends.utils import CursorDebugWrapper
from django.db.models import QuerySet

# (major, minor) of the releases this module was written and tested against.
WRITTEN_FOR = {"django": (5, 2), "psycopg": (3, 3)}


def field_converters(model: type[models.Model], field: models.Field) -> tuple[Any, list]:
    """The column expression of ``field`` and the converters the ORM applies to its values
    (``get_db_converters``: the ORM's compiler calls it, there is no public spelling)."""
    col = field.get_col(model._meta.db_table)
    return col, connection.ops.get_db_converters(col) + col.get_db_converters(connection)


def compiled_sql(queryset: QuerySet) -> tuple[str, tuple]:
    """The SQL and parameters the ORM would run for ``queryset`` (``query.sql_with_params``), for
    reads that stream rows from the cursor instead of building a model or tuple per row."""
    return queryset.query.sql_with_params()


class PreparedDebugCursor(CursorDebugWrapper):
    """Logs a prepared statement by its text (``%s`` for the values) where Django's debug cursor
    logs nothing: psycopg keeps no composed query for a prepared execution."""

    def execute(self, sql, params=None):
        with self.debug_sql(sql, params):
            return self._execute_with_wrappers(sql, params, many=False, executor=self._execute)


@contextmanager
def preparing_cursor() -> Iterator[Any]:
    """A Django cursor whose psycopg cursor binds on the server and prepares on first use.

    Django sets psycopg's ``cursor_factory`` to a client-side binding cursor and
    ``prepare_threshold`` to None; both are swapped only while this cursor is open, so the ORM's
    own statements are never prepared nor remembered by psycopg.
    """
    import psycopg

    connection.ensure_connection()
    raw = connection.connection
    factory = raw.cursor_factory
    raw.cursor_factory = psycopg.Cursor
    try:
        cursor = connection.cursor()
    finally:
        raw.cursor_factory = factory
    if isinstance(cursor, CursorDebugWrapper):  # DEBUG, or a test capturing queries
        cursor = PreparedDebugCursor(cursor.cursor, connection)
    raw = cursor.cursor.connection  # the same, unless the health check reconnected
    threshold = raw.prepare_threshold
    raw.prepare_threshold = 0
    try:
        with cursor:
            yield cursor
    finally:
        raw.prepare_threshold = threshold


def register_timestamptz_loader(cursor, tz: tzinfo | None) -> None:
    """Parse ``timestamptz`` on this psycopg cursor with psycopg's compiled loader, then give it the
    connection's zone as Django's loader does; Django's subclasses psycopg's pure-Python one
    (Django ticket #36960)."""
    cursor.cursor.adapters.register_loader("timestamptz", _compiled_tz_loader(tz))


@cache
def _compiled_tz_loader(tz: tzinfo | None) -> type:
    import psycopg
    from psycopg.adapt import Loader
    from psycopg.postgres import types
    from psycopg.pq import Format

    parser = psycopg.adapters.get_loader(types["timestamptz"].oid, Format.TEXT)

    class TzLoader(Loader):
        def __init__(self, oid, context=None):
            super().__init__(oid, context)
            self._parse = parser(oid, context).load

        def load(self, data):
            return self._parse(data).replace(tzinfo=tz)

    return TzLoader


def binary_copy_types(db_types: Sequence[str]) -> list[str] | None:
    """psycopg's name of each PostgreSQL column type ("bigint", "varchar(64)", "timestamp with
    time zone", ...), for a binary COPY; None when psycopg does not know one of them."""
    from psycopg.postgres import types

    names = []
    for db_type in db_types:
        info = types.get(db_type.split("(")[0]) if db_type else None
        if info is None:
            return None
        names.append(info.name)
    return names


def copy_rows(cursor, sql: str, rows: Iterable[Sequence], types: list[str] | None) -> None:
    """Send ``rows`` through ``sql`` (a ``COPY … FROM STDIN``) on this Django cursor's psycopg
    cursor: binary when ``types`` names each column's type (the server then reads numbers and
    timestamps as they are stored, not from text), else text. JSON columns are given as text in
    both; in binary they travel as jsonb's binary form (a version byte, 1, then that text)."""
    raw = cursor.cursor
    if types is not None:
        sql += " (FORMAT BINARY)"
    with raw.copy(sql) as copy:
        if types is not None:
            raw.adapters.register_dumper(None, _jsonb_text_dumper())  # this cursor only, by type
            copy.set_types(types)
        for row in rows:
            copy.write_row(row)


@cache
def _jsonb_text_dumper() -> type:
    from psycopg.adapt import Dumper
    from psycopg.postgres import types
    from psycopg.pq import Format

    class JsonbTextDumper(Dumper):
        format = Format.BINARY
        oid = types["jsonb"].oid

        def dump(self, obj: str) -> bytes:
            return b"\x01" + obj.encode()

    return JsonbTextDumper


class CompiledQuery:
    """An ORM read compiled once per process and database, then run with other values.

    ``build(*values)`` returns the queryset; it is called once with stand-in integers, which are
    found again among the compiled parameters and replaced by the real values on each run. The
    ORM writes the SQL, in the connection's dialect; only building it, which costs more than
    running a small read, is saved. Values must be integers that the ORM passes on unchanged
    (ids, counts); a build that drops or transforms one raises at once.
    """

    # Inside a 32-bit integer column's range, where the ORM keeps a lookup's value as given.
    _STAND_IN = 2_141_592_653

    def __init__(self, build):
        self._build = build
        self._compiled: dict[str, tuple[str, list, list[tuple[int, int]]]] = {}

    def sql(self, *values: int) -> tuple[str, list]:
        compiled = self._compiled.get(connection.alias)
        if compiled is None:
            stand_ins = [self._STAND_IN + n for n in range(len(values))]
            sql, params = compiled_sql(self._build(*stand_ins))
            # psycopg's backend may wrap an integer (Int4, an int subclass); the wrapper is kept.
            slots = [
                (at, stand_ins.index(p))
                for at, p in enumerate(params)
                if isinstance(p, int) and not isinstance(p, bool) and p in stand_ins
            ]
            if {n for _, n in slots} != set(range(len(values))):
                raise ValueError("the compiled query lost one of its values; build it with plain integers")
            compiled = self._compiled[connection.alias] = (sql, list(params), slots)
        sql, params, slots = compiled
        params = list(params)
        for at, n in slots:
            params[at] = type(params[at])(values[n])
        return sql, params


class _Marker:
    """Where a :class:`CompiledWrite`'s value goes among the compiled parameters."""

    __slots__ = ("n", "field")

    def __init__(self, n: int, field: models.Field):
        self.n, self.field = n, field


class Slot(models.Expression):
    """A value of ``field`` given on each run of a :class:`CompiledWrite`; compiled as one
    placeholder whose parameter is a marker, so no stand-in value has to be found again."""

    def __init__(self, n: int, field: models.Field):
        super().__init__(output_field=field)
        self.n = n

    def as_sql(self, compiler, connection):
        return "%s", [_Marker(self.n, self.output_field)]


def update_statement(queryset: QuerySet, **values) -> tuple[str, tuple]:
    """The statement ``queryset.update(**values)`` runs (a single-table UPDATE), without running it
    (``UpdateQuery``, ``get_compiler``: what ``QuerySet.update`` does)."""
    from django.db.models.sql import UpdateQuery

    query = queryset.query.chain(UpdateQuery)
    query.add_update_values(values)
    return query.get_compiler(queryset.db).as_sql()


def insert_statement(model: type[models.Model], rows: list[dict], *, returning_pk: bool = False):
    """The one INSERT of ``rows`` (attribute name → value, the same names in every row) that
    ``bulk_create`` runs, without running it (``InsertQuery``, ``get_compiler``). Values are
    taken as given (``raw``: no ``auto_now``, no model defaults), so every column without a
    database default must be named; ``returning_pk`` adds ``RETURNING`` the primary key where the
    database can."""
    from django.db.models.sql import InsertQuery

    fields = [model._meta.get_field(name) for name in rows[0]]
    query = InsertQuery(model)
    query.insert_values(fields, [model(**row) for row in rows], raw=True)
    compiler = query.get_compiler(connection.alias)
    if returning_pk and connection.features.can_return_columns_from_insert:
        compiler.returning_fields = [model._meta.pk]
    ((sql, params),) = compiler.as_sql()
    return sql, params


class CompiledWrite:
    """An ORM write (:func:`update_statement`, :func:`insert_statement`) compiled once per process,
    database and shape, then run with other values: the writes' counterpart of
    :class:`CompiledQuery`.

    ``build(slot, *shape)`` returns the statement; ``slot(name)`` stands for a value of the
    model's field ``name`` (``"pk"`` for the primary key) given on each run, in the order the
    slots were made. Each run's values are prepared as the ORM prepares them for saving
    (``get_db_prep_save``), so the statement and its parameters are what the ORM would run.
    """

    def __init__(self, model: type[models.Model], build):
        self._model, self._build = model, build
        self._compiled: dict[tuple, tuple[str, list, list[tuple[int, _Marker]]]] = {}

    def sql(self, values, *shape) -> tuple[str, list]:
        key = (connection.alias, *shape)
        compiled = self._compiled.get(key)
        if compiled is None:
            made: list[Slot] = []

            def slot(name: str) -> Slot:
                field = self._model._meta.pk if name == "pk" else self._model._meta.get_field(name)
                made.append(Slot(len(made), field))
                return made[-1]

            sql, params = self._build(slot, *shape)
            markers = [(at, p) for at, p in enumerate(params) if isinstance(p, _Marker)]
            if sorted(m.n for _, m in markers) != list(range(len(made))):
                raise ValueError("the compiled write lost or repeated one of its values")
            compiled = self._compiled[key] = (sql, list(params), markers)
        sql, params, markers = compiled
        if len(values) != len(markers):
            raise ValueError(f"the compiled write takes {len(markers)} values, not {len(values)}")
        params = list(params)
        for at, marker in markers:
            params[at] = marker.field.get_db_prep_save(values[marker.n], connection)
        return sql, params


class QuietHealthCheck:
    """A mixin for a PostgreSQL backend (psycopg 3): the per-request health check
    (``CONN_HEALTH_CHECKS``, Django's ``close_if_health_check_failed``) looks at the idle
    connection's socket instead of sending ``SELECT 1``, which was a round trip on every request.

    An idle connection receives nothing until it sends a query; a server that restarts, stops or
    drops the connection sends its goodbye and closes the socket, which then reads as ready. So a
    quiet socket passes; anything else (something to read, a transaction left open, a broken
    connection) takes Django's check, which sends ``SELECT 1``. A server that vanishes without a
    word is not seen here; the first query meets the client's deadline instead.
    """

    def close_if_health_check_failed(self):
        if self.connection is not None and self.health_check_enabled and not self.health_check_done:
            if _quiet(self.connection):
                self.health_check_done = True
                return
        super().close_if_health_check_failed()


def _quiet(raw) -> bool:
    import select

    from psycopg.pq import TransactionStatus

    if raw.closed or raw.broken or raw.info.transaction_status != TransactionStatus.IDLE:
        return False
    try:
        poller = select.poll()  # poll, not select: no limit on the descriptor's number
        poller.register(raw.fileno(), select.POLLIN)
        return not poller.poll(0)  # data, a hang-up or an error all count as not quiet
    except (OSError, ValueError):
        return False
