"""What a rating request reads of the annotator's history: each earlier assignment at most once
(the lease), and only their work in this batch (the progress strip), whatever the statistics say.

An annotator far ahead of the others leaves their rated items at the "one annotation" level,
which the next-item window walks first. PostgreSQL once planned the "never given to this
annotator" check as an anti join that scanned all of the annotator's assignments for every
candidate when the table's statistics were older than their history: a lease cost grew with
the square of their history (23 ms at 600 items). Here the statistics are taken while the
annotator has rated two items (others have rated 3,000 elsewhere), then they rate 200 more, and
the statement's rows read in the assignment table are counted with ``EXPLAIN ANALYZE``.
"""

import json
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from annotator.models import Assignment, Item
from annotator.rating.services import assignment_sql
from tests.factories import make_batch, make_user

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the plan in question is PostgreSQL's"),
]

HISTORY = 200


def _rate(items, user) -> None:
    now = timezone.now()
    Assignment.objects.bulk_create(
        Assignment(
            item=item,
            batch_id=item.batch_id,
            annotator=user,
            state=Assignment.State.SUBMITTED,
            leased_at=now,
            lease_expires_at=now,
            finished_at=now,
        )
        for item in items
    )
    Item.objects.filter(pk__in=[item.pk for item in items]).update(n_annotations=1)


def _rows_read(node: dict, model=Assignment) -> int:
    """Rows the plan read from ``model``'s table: returned plus filtered out, over all loops."""
    rows = 0
    if node.get("Relation Name") == model._meta.db_table:
        rows += (node.get("Actual Rows", 0) + node.get("Rows Removed by Filter", 0)) * node.get(
            "Actual Loops", 1
        )
    for child in node.get("Plans", []):
        rows += _rows_read(child, model)
    return rows


def _lease(batch, user) -> tuple[str, list]:
    now = timezone.now()
    return assignment_sql.lease_statement(
        batch=batch, annotator_id=user.pk, now=now, expires=now + timedelta(minutes=30)
    )


def _plan(raw) -> dict:
    return (json.loads(raw) if isinstance(raw, str) else raw)[0]["Plan"]


def _explain_lease(batch, user) -> dict:
    sql, params = _lease(batch, user)
    with transaction.atomic(), connection.cursor() as cursor:  # EXPLAIN ANALYZE runs the lease: roll it back
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)
        plan = _plan(cursor.fetchone()[0])
        transaction.set_rollback(True)
    assert plan["Actual Rows"] == 1  # it leased an item: the window was read
    return plan


@pytest.mark.parametrize("one_system", [False, True])
def test_a_lease_reads_the_annotators_history_once_not_once_per_candidate(one_system):
    batch = make_batch(
        "ahead", n_items=HISTORY + 40, systems=("sys-a", "sys-b") if one_system else ("sys-a",)
    )
    if one_system:
        batch.one_system_per_prompt = True
        batch.save(update_fields=["one_system_per_prompt"])
    user = make_user("far-ahead")
    items = list(Item.objects.filter(batch=batch).order_by("position"))
    elsewhere = list(Item.objects.filter(batch=make_batch("elsewhere", n_items=500)))
    for n in range(6):  # a table with others' work in it, as in any study
        _rate(elsewhere, make_user(f"other-{n}"))
    _rate(items[:2], user)
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {connection.ops.quote_name(Assignment._meta.db_table)}")
    _rate(items[2:HISTORY], user)

    rows = _rows_read(_explain_lease(batch, user))

    # Walking past the annotator's HISTORY items costs a lookup each (plus the prompt rule's
    # lookups); an anti join rescanning their history per candidate reads ~HISTORY² / 2 rows.
    assert rows <= 3 * HISTORY, rows


def test_the_lease_plan_walks_the_next_item_index_and_never_compiles():
    """The lease statement must read the next-item index in order and stop after the window,
    and cost less than ``jit_above_cost``: a form of it once planned as a sort of the whole
    progress level cost 101,000-150,000 and spent 28 ms compiling itself on every lease."""
    batch = make_batch("big", n_items=12000)
    user = make_user("plan-reader")
    _rate(list(Item.objects.filter(batch=batch).order_by("position")[:HISTORY]), user)
    with connection.cursor() as cursor:  # as an upload leaves them
        cursor.execute(f"ANALYZE {connection.ops.quote_name(Item._meta.db_table)}")
    sql, params = _lease(batch, user)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("EXPLAIN (FORMAT JSON) " + sql, params)
        plan = _plan(cursor.fetchone()[0])
        cursor.execute("SHOW jit_above_cost")
        jit_above_cost = float(cursor.fetchone()[0])
        transaction.set_rollback(True)

    assert plan["Total Cost"] < jit_above_cost, plan["Total Cost"]
    text = json.dumps(plan)
    assert '"Index Name": "item_next_order"' in text
    assert "c.position" not in text  # no sort by position: the index gives that order


def test_the_progress_strip_reads_the_annotators_work_in_this_batch_only():
    """The strip counts the annotator's assignments in the batch by their items' counters. It
    used to read all of the annotator's assignments in every batch and join them to the items
    (4.8 ms for 10,600 on PostgreSQL); a plain join by the batch's column was then planned as a
    scan of every item in the table."""
    from annotator.rating.selectors import progress as rating_progress

    user = make_user("veteran")
    _rate(list(Item.objects.filter(batch=make_batch("last-year", n_items=2000))), user)
    batch = make_batch("this-week", n_items=100)
    _rate(list(Item.objects.filter(batch=batch).order_by("position")[:20]), user)
    with connection.cursor() as cursor:
        cursor.execute(
            f"ANALYZE {connection.ops.quote_name(Item._meta.db_table)}, "
            f"{connection.ops.quote_name(Assignment._meta.db_table)}"
        )
        read = {"batch_id": batch.pk, "annotator_id": user.pk, "count_gold": False, "with_items": False}
        cursor.execute(
            "EXPLAIN (ANALYZE, FORMAT JSON) " + rating_progress._sql(False, False, True),
            rating_progress._params(**read),
        )
        plan = _plan(cursor.fetchone()[0])

    assert _rows_read(plan) == 20
    assert _rows_read(plan, Item) == 20
