"""Migration 0017 gives every existing assignment its item's batch."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

BEFORE = [("annotator", "0016_score_item_without_constraint")]
AFTER = [("annotator", "0017_assignment_batch")]


@pytest.mark.django_db(transaction=True)
def test_existing_assignments_get_their_items_batch():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    try:
        old = executor.loader.project_state(BEFORE).apps
        Batch, Item, Assignment = (
            old.get_model("annotator", name) for name in ("Batch", "Item", "Assignment")
        )
        user = old.get_model("auth", "User").objects.create(username="before-0017")
        now = timezone.now()
        expected = {}
        for name in ("first", "second"):
            batch = Batch.objects.create(name=name, rubric={}, k=3)
            for position in range(3):
                item = Item.objects.create(
                    batch=batch, item_id=f"{name}-{position}", position=position, prompt="p", response="r"
                )
                Assignment.objects.create(
                    item=item, annotator=user, state="submitted", leased_at=now, lease_expires_at=now
                )
                expected[item.pk] = batch.pk
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(AFTER)
    new = executor.loader.project_state(AFTER).apps
    filled = dict(new.get_model("annotator", "Assignment").objects.values_list("item_id", "batch_id"))
    MigrationExecutor(connection).migrate(executor.loader.graph.leaf_nodes())  # as the other tests expect
    assert filled == expected
