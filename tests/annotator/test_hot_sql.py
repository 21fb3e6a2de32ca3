"""The rating requests' own statements are prepared on PostgreSQL, and only they are."""

import pytest
from django.db import DatabaseError, connection

from annotator.db_rows import chunked_cursor
from annotator.hot_sql import hot_cursor, prepares

pytestmark = pytest.mark.django_db

postgres_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="prepared statements are PostgreSQL's"
)


def _prepared_count() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_prepared_statements")
        return cursor.fetchone()[0]


def test_sqlite_gets_the_usual_cursor():
    if connection.vendor == "postgresql":
        assert prepares()
    else:
        assert not prepares()
        with hot_cursor() as cursor:
            cursor.execute("SELECT %s", [1])
            assert cursor.fetchone() == (1,)


@postgres_only
def test_a_hot_statement_is_prepared_and_the_orm_is_left_alone():
    before = _prepared_count()
    for n in (1, 2, 3):
        with hot_cursor() as cursor:
            cursor.execute("SELECT %s::int + 1 AS hot_probe", [n])
            assert cursor.fetchone() == (n + 1,)
    assert _prepared_count() == before + 1  # prepared once, executed three times
    raw = connection.connection
    assert raw.prepare_threshold is None  # as Django left it: psycopg keeps no record of ORM statements
    from django.contrib.auth import get_user_model

    get_user_model().objects.filter(username="nobody").exists()
    assert _prepared_count() == before + 1


@postgres_only
def test_a_refused_cached_plan_closes_the_connection_when_the_request_ends():
    assert connection.close_at is None or connection.close_at > 0
    with pytest.raises(DatabaseError), hot_cursor():
        raise DatabaseError("cached plan must not change result type")
    assert connection.close_at == 0
    assert connection.connection.prepare_threshold is None


@postgres_only
def test_chunked_reads_obey_disable_server_side_cursors(monkeypatch):
    with chunked_cursor() as cursor:
        assert getattr(cursor.cursor, "name", None)  # a named (server-side) cursor
    monkeypatch.setitem(connection.settings_dict, "DISABLE_SERVER_SIDE_CURSORS", True)
    with chunked_cursor() as cursor:
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)
        assert not getattr(cursor.cursor, "name", None)
