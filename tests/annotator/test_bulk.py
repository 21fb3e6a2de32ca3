"""The bulk writer behind every import, and the planner statistics it leaves behind."""

import pytest
from django.db import connection, transaction
from django.utils import timezone

from annotator.models import Annotation, Item, Score
from annotator.services.bulk import analyze_after_commit, ids_reserve, rows_insert
from tests.factories import make_batch, make_user

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("copy_format", ["binary", "text"])
def test_rows_insert_writes_given_values_constants_and_defaults(copy_format, monkeypatch):
    """On PostgreSQL the COPY is binary when psycopg knows every column's type, else text; both
    write the same rows (SQLite takes neither path)."""
    if copy_format == "text":
        monkeypatch.setattr("annotator.services.bulk.binary_copy_types", lambda db_types: None)
    batch = make_batch(n_items=2)
    user = make_user("ann")
    items = list(Item.objects.filter(batch=batch).order_by("position"))
    now = timezone.now()
    rows_insert(
        model=Annotation,
        fields=("item", "annotator", "flags", "comment"),
        rows=[
            (items[0].pk, user.pk, '["unsafe_suggestion", "caf\u00e9 \\\\ \\t"]', "=1+1\tcafé\n\\N"),
            (items[1].pk, user.pk, "[]", ""),
        ],
        constants={"source": Annotation.Source.IMPORT, "submitted_at": now},
    )
    first, second = Annotation.objects.order_by("item__position")
    assert (first.flags, first.comment, first.source, first.submitted_at) == (
        ["unsafe_suggestion", "café \\ \t"],
        "=1+1\tcafé\n\\N",
        "import",
        now,
    )
    assert (second.flags, second.constraints_met, second.started_at) == ([], [], None)  # defaults
    assert second.updated_at is not None  # auto_now is filled in
    rows_insert(
        model=Score,
        fields=("annotation", "item", "dimension", "value"),
        rows=[(first.pk, items[0].pk, "coherence", 4)],
    )
    assert list(first.scores.values_list("dimension", "value")) == [("coherence", 4)]


def test_reserved_ids_are_new_and_rows_take_them():
    batch = make_batch(n_items=3)
    user = make_user("ann")
    items = list(Item.objects.filter(batch=batch).order_by("position"))
    now = timezone.now()
    made = Annotation.objects.create(item=items[2], annotator=user, submitted_at=now)
    made_pk = made.pk
    made.delete()  # a deleted row's id is never handed out again
    ids = ids_reserve(model=Annotation, count=2)
    assert len(set(ids)) == 2 and min(ids) > made_pk
    rows_insert(
        model=Annotation,
        fields=("id", "item", "annotator"),
        rows=[(ids[0], items[0].pk, user.pk), (ids[1], items[1].pk, user.pk)],
        constants={"submitted_at": now},
    )
    assert list(Annotation.objects.order_by("id").values_list("id", "item_id")) == [
        (ids[0], items[0].pk),
        (ids[1], items[1].pk),
    ]
    later = Annotation.objects.create(item=items[2], annotator=user, submitted_at=now)
    assert later.pk > max(ids)  # the table's own numbering carries on after them
    assert ids_reserve(model=Annotation, count=0) == []


def test_reserved_ids_that_do_not_run_unbroken_come_back_one_by_one_in_order():
    """On PostgreSQL the ids usually run unbroken and come back as their bounds; when another writer
    took some in between (here: a sequence that steps by 3), the sorted list comes back instead."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite reserves the ids after the largest; only PostgreSQL's sequence can leave gaps")
    unbroken = ids_reserve(model=Annotation, count=4)
    assert unbroken == list(range(unbroken[0], unbroken[0] + 4))
    with connection.cursor() as cursor:  # undone with the test's transaction
        cursor.execute("SELECT pg_get_serial_sequence(%s, 'id')", [Annotation._meta.db_table])
        cursor.execute(f"ALTER SEQUENCE {cursor.fetchone()[0]} INCREMENT BY 3")
    gapped = ids_reserve(model=Annotation, count=4)
    assert gapped == [gapped[0] + 3 * n for n in range(4)] and gapped[0] > unbroken[-1]


@pytest.mark.django_db(transaction=True)
def test_ids_are_reserved_only_inside_a_transaction():
    with pytest.raises(transaction.TransactionManagementError):
        ids_reserve(model=Annotation, count=1)  # outside it, another writer could take them first
    with transaction.atomic():
        assert len(ids_reserve(model=Annotation, count=1)) == 1


def _reltuples(table: str) -> float:
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE relname = %s", [table])
        return cursor.fetchone()[0]


def test_bulk_writes_leave_planner_statistics(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        make_batch(n_items=40)
        analyze_after_commit(Item)
    if connection.vendor == "postgresql":
        assert len(callbacks) == 1
        assert _reltuples(Item._meta.db_table) >= 40  # ANALYZE ran: -1 means never analysed
    else:
        assert callbacks == []  # SQLite keeps no statistics unless asked; its plans use the indexes


def test_annotation_import_analyzes_what_it_wrote(django_capture_on_commit_callbacks):
    from annotator.uploads.services.annotation_imports import annotations_import_file

    data = (
        "item_id,prompt,response,annotator,coherence,relevance,instruction_following,safety_compliance,fluency\n"
        + "".join(f"i{n},p,r,rater{a},4,4,4,4,4\n" for n in range(10) for a in range(3))
    ).encode()
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        annotations_import_file(data=data, filename="a.csv", batch_name="offline")
    assert Score.objects.count() == 150 and Annotation.objects.count() == 30
    assert Item.objects.filter(n_annotations=3).count() == 10
    if connection.vendor == "postgresql":
        assert len(callbacks) == 1
        assert _reltuples(Score._meta.db_table) >= 150


@pytest.mark.django_db(transaction=True)  # the worker closes its connection between tasks
def test_the_worker_refreshes_the_statistics_after_the_upload_returns(settings):
    """The upload queues ANALYZE for the background worker instead of running it (the statistics are
    stale until the worker has run it); SQLite keeps no statistics, so nothing is queued there."""
    from django.core.management import call_command
    from django_tasks_db.models import DBTaskResult

    from annotator.uploads.services.annotation_imports import annotations_import_file

    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": ["default"]}}
    data = (
        "item_id,prompt,response,annotator,coherence,relevance,instruction_following,safety_compliance,fluency\n"
        + "".join(f"i{n},p,r,rater{a},4,4,4,4,4\n" for n in range(10) for a in range(3))
    ).encode()
    annotations_import_file(data=data, filename="a.csv", batch_name="offline")
    queued = list(DBTaskResult.objects.values_list("task_path", "args_kwargs", "priority"))
    if connection.vendor != "postgresql":
        assert queued == []
        return
    assert queued == [
        (
            "annotator.services.bulk.analyze_tables",
            {
                "args": [],
                "kwargs": {
                    "labels": [
                        "annotator.Item",
                        "annotator.Annotation",
                        "annotator.Score",
                        "annotator.Assignment",
                    ]
                },
            },
            50,
        )
    ]
    assert _reltuples(Score._meta.db_table) < 150  # not analysed yet: -1 means never
    call_command("db_worker", "--batch", "--interval", "0", "--no-startup-delay", verbosity=0)
    assert DBTaskResult.objects.get().status == "SUCCESSFUL"
    assert _reltuples(Score._meta.db_table) >= 150 and _reltuples(Item._meta.db_table) >= 10
