"""Each rule the rating path spells both in Python and in SQL selects the same rows either way.

Two rules, named apart: batch access (the batch names no annotators or names this one, and the
account is not limited to other batches) and the standing (quality control still lets the
annotator rate in the batch).
"""

from itertools import product

import pytest
from django.db import connection
from django.utils import timezone

from annotator.models import AccountScope, AnnotatorStanding, Batch
from annotator.models.quality import standing_stopped_sql
from annotator.rating.selectors.queue import batch_access_q, batch_access_sql
from tests.factories import make_batch, make_user

pytestmark = pytest.mark.django_db


def _sql_ids(table, alias: str, where: str, params: list) -> set[int]:
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {alias}.id FROM {connection.ops.quote_name(table)} {alias} WHERE {where}", params
        )
        return {row[0] for row in cursor.fetchall()}


def test_batch_access_q_and_sql_select_the_same_batches():
    me, other = make_user("me"), make_user("other")
    batches = {}
    # Per batch: whom it names (nobody, me, only someone else, both).
    for named in ("nobody", "me", "other", "both"):
        batch = make_batch(f"names-{named}", n_items=1, constraints=())
        batch.annotators.set({"nobody": [], "me": [me], "other": [other], "both": [me, other]}[named])
        batches[named] = batch
    scoped_to = {
        "unscoped": None,
        "scoped-mine": ["nobody", "me"],
        "scoped-other": ["other"],
        "scoped-none": [],
    }
    seen = {}
    for scope, names in scoped_to.items():
        user = make_user(f"user-{scope}")
        for batch in batches.values():  # the named batches name this user too, as `me` is named
            if batch.annotators.filter(pk=me.pk).exists():
                batch.annotators.add(user)
        if names is not None:
            AccountScope.objects.create(user=user).batches.set([batches[n] for n in names])
        by_q = set(Batch.objects.filter(batch_access_q(user)).values_list("pk", flat=True))
        sql, params = batch_access_sql("b.id", user)
        by_sql = _sql_ids(Batch._meta.db_table, "b", sql, params)
        assert by_q == by_sql, scope
        seen[scope] = {name for name, b in batches.items() if b.pk in by_q}
    # The table of cases is not trivial: each scope lets some batches through and stops others.
    assert seen == {
        "unscoped": {"nobody", "me", "both"},
        "scoped-mine": {"nobody", "me"},
        "scoped-other": set(),
        "scoped-none": set(),
    }


def test_batch_access_q_on_an_item_query_follows_the_item_batch():
    from annotator.models import Item

    user = make_user("reader")
    open_batch = make_batch("everyone", n_items=2, constraints=())
    named = make_batch("someone-else", n_items=2, constraints=())
    named.annotators.set([make_user("someone")])
    items = set(
        Item.objects.filter(batch_access_q(user, batch="batch_id")).values_list("batch_id", flat=True)
    )
    assert items == {open_batch.pk}


def test_the_standing_rule_property_q_and_sql_agree():
    batch = make_batch("standing-parity", n_items=1, constraints=())
    now = timezone.now()
    cases = list(product([False, True], [None, now], [None, now], AnnotatorStanding.Training.values))
    for i, (excluded, blocked, screened, training) in enumerate(cases):
        AnnotatorStanding.objects.create(
            batch=batch,
            annotator=make_user(f"s{i}"),
            excluded=excluded,
            blocked_at=blocked,
            screened_out_at=screened,
            training=training,
        )
    by_property = {s.pk for s in AnnotatorStanding.objects.all() if not s.allows_rating}
    by_q = set(AnnotatorStanding.objects.filter(AnnotatorStanding.STOPPED).values_list("pk", flat=True))
    sql, params = standing_stopped_sql("st")
    by_sql = _sql_ids(AnnotatorStanding._meta.db_table, "st", sql, params)
    assert by_property == by_q == by_sql
    assert 0 < len(by_property) < len(cases)
    # Only the row with nothing against it may rate, whatever the training's other states.
    allowed = {
        (s.excluded, s.blocked_at is None, s.screened_out_at is None, s.training)
        for s in AnnotatorStanding.objects.exclude(pk__in=by_property)
    }
    assert allowed == {
        (False, True, True, t)
        for t in AnnotatorStanding.Training.values
        if t != AnnotatorStanding.Training.FAILED
    }


@pytest.mark.parametrize("one_system_per_prompt", [False, True])
def test_candidate_items_orm_and_sql_select_the_same_items(one_system_per_prompt):
    from annotator.models import Assignment, Item
    from annotator.rating.services.assignment_sql import _candidates_params, _candidates_sql, candidate_items

    batch = make_batch("candidates", n_items=16, k=3, systems=("a", "b"), constraints=())
    Batch.objects.filter(pk=batch.pk).update(one_system_per_prompt=one_system_per_prompt)
    batch.refresh_from_db()
    me, now = make_user("me"), timezone.now()
    items = list(batch.items.order_by("position"))
    # Every pair of counters below k and at it, and a few items already given to me.
    for item, (done, held) in zip(items, product(range(4), range(4)), strict=False):
        Item.objects.filter(pk=item.pk).update(n_annotations=done, n_leased=held)
    for item in (items[0], items[5], items[10]):
        Assignment.objects.create(item=item, annotator=me, leased_at=now, lease_expires_at=now)
    Item.objects.filter(pk=items[1].pk).update(prompt_id="")  # shares no prompt with item 0 now
    sql = _candidates_sql(batch.one_system_per_prompt)
    by_sql = _sql_ids(Item._meta.db_table, "c", sql.split(" WHERE ", 1)[1], _candidates_params(batch, me.pk))
    values = {"annotator_id": me.pk, "batch_id": batch.pk, "k": batch.k}
    by_orm = set(
        candidate_items(**values, one_system_per_prompt=one_system_per_prompt).values_list("pk", flat=True)
    )
    assert by_orm == by_sql and 0 < len(by_sql) < len(items)
    # Item 4 is free but shares its prompt with item 5, which was given to me.
    assert items[1].pk in by_sql and (items[4].pk in by_sql) is not one_system_per_prompt
    # Without the lease counters, items only held by others' leases count as well.
    wider = set(
        candidate_items(**values, one_system_per_prompt=one_system_per_prompt, free_slot=False).values_list(
            "pk", flat=True
        )
    )
    assert by_sql < wider
