"""The private Django and psycopg internals the app relies on stay in annotator/db_private.py,
and the installed releases are the ones that module was written for.

An upgrade of Django or psycopg fails the version test first: read annotator/db_private.py,
check each touch against the new release (the tests below exercise every one), then move
WRITTEN_FOR.
"""

import json
import re
import select
from contextlib import contextmanager
from pathlib import Path

import django
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotator import db_private
from annotator.db_private import WRITTEN_FOR, compiled_sql, field_converters
from annotator.models import Annotation, Batch, Score
from tests.factories import make_annotation, make_batch, make_user

ROOT = Path(__file__).resolve().parents[2]
PRIVATE = re.compile(
    r"_execute_with_wrappers|get_db_converters|sql_with_params|prepare_threshold|cursor_factory"
    r"|register_loader|from psycopg\.(adapt|pq|postgres)|get_compiler|UpdateQuery|InsertQuery"
    r"|close_if_health_check_failed"
)
postgres_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="psycopg's internals are PostgreSQL's"
)


def _major_minor(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def test_django_is_the_release_the_private_touches_were_written_for():
    assert django.VERSION[:2] == WRITTEN_FOR["django"]


def test_psycopg_is_the_release_the_private_touches_were_written_for():
    psycopg = pytest.importorskip("psycopg")  # required by requirements.txt; PostgreSQL runs on it
    assert _major_minor(psycopg.__version__) == WRITTEN_FOR["psycopg"]


def test_no_other_module_touches_the_internals():
    found = []
    for path in sorted((ROOT / "annotator").rglob("*.py")):
        if path.name == "db_private.py":
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if PRIVATE.search(line):
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert found == []


@pytest.mark.django_db
def test_field_converters_convert_as_the_orm_does():
    batch = make_batch("converters", n_items=1)
    annotation = make_annotation(batch.items.first(), make_user("conv"), {}, flags=["off_topic"])
    with connection.cursor() as cursor:
        table = connection.ops.quote_name(Annotation._meta.db_table)
        cursor.execute(f"SELECT flags, submitted_at FROM {table} WHERE id = %s", [annotation.pk])
        raw_flags, raw_when = cursor.fetchone()
    converted = []
    for name, raw in (("flags", raw_flags), ("submitted_at", raw_when)):
        col, converters = field_converters(Annotation, Annotation._meta.get_field(name))
        for convert in converters:
            raw = convert(raw, col, connection)
        converted.append(raw)
    stored = Annotation.objects.values_list("flags", "submitted_at").get(pk=annotation.pk)
    assert tuple(converted) == stored == (["off_topic"], annotation.submitted_at)


@pytest.mark.django_db
def test_compiled_sql_runs_what_the_orm_runs():
    make_batch("compiled-a", n_items=1)
    make_batch("compiled-b", n_items=1)
    query = Batch.objects.filter(name__startswith="compiled").order_by("name").values_list("name")
    sql, params = compiled_sql(query)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        assert cursor.fetchall() == list(query)


@postgres_only
@pytest.mark.django_db
def test_the_preparing_cursor_logs_its_statement_and_leaves_the_connection_as_django_set_it():
    connection.ensure_connection()
    raw = connection.connection
    factory, threshold = raw.cursor_factory, raw.prepare_threshold
    with CaptureQueriesContext(connection) as ctx, db_private.preparing_cursor() as cursor:
        cursor.execute("SELECT %s::int AS private_probe", [41])
        assert cursor.fetchone() == (41,)
        assert raw.prepare_threshold == 0
    assert [q["sql"] for q in ctx.captured_queries] == ["SELECT %s::int AS private_probe"]
    assert (raw.cursor_factory, raw.prepare_threshold) == (factory, threshold)


@postgres_only
@pytest.mark.django_db
def test_the_compiled_timestamptz_loader_reads_what_djangos_reads():
    batch = make_batch("loader", n_items=1)
    annotation = make_annotation(batch.items.first(), make_user("loader"), {})
    table = connection.ops.quote_name(Annotation._meta.db_table)
    sql = f"SELECT submitted_at FROM {table} WHERE id = %s"
    with connection.cursor() as cursor:
        cursor.execute(sql, [annotation.pk])
        django_value = cursor.fetchone()[0]
    with connection.cursor() as cursor:
        db_private.register_timestamptz_loader(cursor, connection.timezone)
        cursor.execute(sql, [annotation.pk])
        value = cursor.fetchone()[0]
    assert value == django_value and value.tzinfo == django_value.tzinfo


@pytest.mark.django_db
def test_a_compiled_query_runs_with_each_call_s_values():
    from annotator.db_private import CompiledQuery
    from annotator.models import Item

    small, large = make_batch("compiled-small", n_items=2), make_batch("compiled-large", n_items=5)
    first_items = CompiledQuery(
        lambda batch_id, limit: (
            Item.objects.filter(batch_id=batch_id, position__lt=limit)
            .order_by("position")
            .values_list("position")
        )
    )
    for batch, limit in ((small, 9), (large, 3), (large, 9)):
        with connection.cursor() as cursor:
            cursor.execute(*first_items.sql(batch.pk, limit))
            rows = cursor.fetchall()
        assert rows == list(
            Item.objects.filter(batch=batch, position__lt=limit).order_by("position").values_list("position")
        )
    assert len(rows) == 5


def test_a_compiled_query_that_loses_a_value_refuses_to_run():
    from annotator.db_private import CompiledQuery

    lost = CompiledQuery(lambda batch_id: Batch.objects.filter(pk=1).values_list("pk"))
    with pytest.raises(ValueError, match="lost one of its values"):
        lost.sql(5)


@pytest.mark.django_db(transaction=True)
def test_compiled_writes_run_what_the_orm_runs_with_each_call_s_values():
    from django.db.models import F

    from annotator.db_private import CompiledWrite, insert_statement, update_statement
    from annotator.models import Item

    batch = make_batch("compiled-writes", n_items=3)
    first, second = batch.items.order_by("position")[:2]
    rename = CompiledWrite(
        Batch, lambda slot: update_statement(Batch.objects.filter(pk=slot("pk")), name=slot("name"))
    )
    bump = CompiledWrite(
        Item,
        lambda slot: update_statement(
            Item.objects.filter(pk=slot("pk")), n_leased=F("n_leased") + slot("n_leased")
        ),
    )
    scores = CompiledWrite(
        Score,
        lambda slot, n: insert_statement(
            Score,
            [
                {name: slot(name) for name in ("annotation_id", "item_id", "dimension", "value")}
                for _ in range(n)
            ],
        ),
    )
    annotation = make_annotation(first, make_user("writer"), {})
    with connection.cursor() as cursor:
        cursor.execute(*rename.sql([batch.pk, "renamed ‘once’"]))
        for item, n in ((first, 2), (second, 5), (first, 1)):
            cursor.execute(*bump.sql([item.pk, n]))
        cursor.execute(
            *scores.sql([annotation.pk, first.pk, "fluency", 4, annotation.pk, first.pk, "safety", 2], 2)
        )
    assert Batch.objects.get(pk=batch.pk).name == "renamed ‘once’"
    assert dict(Item.objects.filter(batch=batch).values_list("pk", "n_leased")) == {
        first.pk: 3,
        second.pk: 5,
        batch.items.get(position=2).pk: 0,
    }
    assert sorted(annotation.scores.values_list("item_id", "dimension", "value")) == [
        (first.pk, "fluency", 4),
        (first.pk, "safety", 2),
    ]
    with pytest.raises(ValueError, match="takes 2 values"):
        rename.sql([batch.pk])


def test_a_compiled_write_that_loses_a_value_refuses_to_run():
    from annotator.db_private import CompiledWrite, update_statement

    lost = CompiledWrite(
        Batch, lambda slot: (slot("name"), update_statement(Batch.objects.filter(pk=1), k=3))[1]
    )
    with pytest.raises(ValueError, match="lost or repeated one of its values"):
        lost.sql(["x"])


@contextmanager
def _second_connection():
    """Another connection to the test database, built as the app builds its own, health checks on: open
    while the block runs, closed after."""
    from annotator.pgbackend.base import DatabaseWrapper

    db = DatabaseWrapper({**connection.settings_dict, "CONN_HEALTH_CHECKS": True}, alias="second")
    try:
        db.ensure_connection()
        yield db
    finally:
        db.close()


def _answers(db) -> bool:
    """Whether a query on ``db`` runs (on a new connection if the check closed the last)."""
    with db.cursor() as cursor:
        cursor.execute("SELECT 1")
        return cursor.fetchone() == (1,)


def _health_check(db) -> list[str]:
    """Run the health check a new request runs first; returns what it did ("SELECT 1", "closed")."""
    done = []
    usable = db.is_usable

    def counted():
        done.append("SELECT 1")
        return usable()

    db.is_usable = counted
    db.health_check_done = False
    db.close_if_health_check_failed()
    if db.connection is None:
        done.append("closed")
    return done


@postgres_only
@pytest.mark.django_db
def test_the_health_check_of_a_quiet_connection_sends_nothing(django_db_blocker):
    with django_db_blocker.unblock(), _second_connection() as db:
        raw = db.connection
        assert _health_check(db) == []
        assert db.connection is raw
        assert _answers(db)


@postgres_only
@pytest.mark.django_db
def test_the_health_check_closes_a_connection_the_server_ended(django_db_blocker):
    with django_db_blocker.unblock(), _second_connection() as db:
        with db.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            (pid,) = cursor.fetchone()
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
        assert select.select([db.connection.fileno()], [], [], 5)[0]  # its goodbye has arrived
        assert _health_check(db) == ["SELECT 1", "closed"]
        assert _answers(db)  # the request goes on, on a new connection


@postgres_only
@pytest.mark.django_db
def test_the_health_check_of_a_connection_with_something_to_read_asks_the_server(django_db_blocker):
    with django_db_blocker.unblock(), _second_connection() as db:
        db.connection.execute("LISTEN health_probe")
        with _second_connection() as notifier, notifier.cursor() as cursor:  # autocommit: delivered at once
            cursor.execute("NOTIFY health_probe")
        raw = db.connection
        assert select.select([raw.fileno()], [], [], 5)[0]
        assert _health_check(db) == ["SELECT 1"]  # alive: kept
        assert db.connection is raw


def test_binary_copy_types_are_psycopgs_names_and_none_for_a_type_it_does_not_know():
    pytest.importorskip("psycopg")  # required by requirements.txt; PostgreSQL runs on it
    assert db_private.binary_copy_types(
        ["bigint", "varchar(64)", "jsonb", "timestamp with time zone", "smallint", "integer", "text"]
    ) == ["int8", "varchar", "jsonb", "timestamptz", "int2", "int4", "text"]
    assert db_private.binary_copy_types(["bigint", "no_such_type"]) is None


@postgres_only
@pytest.mark.django_db
def test_a_binary_copy_writes_json_given_as_text():
    batch = make_batch("copy", n_items=1)
    annotation = make_annotation(batch.items.first(), make_user("copy"), {})
    table = connection.ops.quote_name(Annotation._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute("CREATE TEMPORARY TABLE copy_probe (n bigint, doc jsonb, note text)")
        db_private.copy_rows(
            cursor,
            "COPY copy_probe (n, doc, note) FROM STDIN",
            [(annotation.pk, '{"a": [1, "é"]}', "tab\there")],
            ["int8", "jsonb", "text"],
        )
        cursor.execute(f"SELECT p.doc::text, p.note FROM copy_probe p JOIN {table} a ON a.id = p.n")
        doc, note = cursor.fetchone()
    assert (json.loads(doc), note) == ({"a": [1, "é"]}, "tab\there")
