"""Migration 0018 binds each Prolific worker's session id to them, earliest arrival first, and changes
no platform id already stored."""

from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

BEFORE = [("annotator", "0017_assignment_batch")]
AFTER = [("annotator", "0018_crowd_entry")]


@pytest.mark.django_db(transaction=True)
def test_sessions_bind_to_the_first_worker_who_came_with_them():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    try:
        old = executor.loader.project_state(BEFORE).apps
        Batch, Enrolment = (old.get_model("annotator", name) for name in ("Batch", "Enrolment"))
        User = old.get_model("auth", "User")
        batch = Batch.objects.create(name="before-0018", rubric={}, k=3)
        now = timezone.now()
        rows = [
            ("first", "A" * 24, "S1", 0, "prolific"),
            ("copycat", "B" * 24, "S1", 5, "prolific"),
            ("other", "C" * 24, "S2", 1, "prolific"),
            ("lab", "", "", 2, ""),
            ("mturk", "W1", "HIT", 3, "generic"),
        ]
        for username, worker_id, session_id, minutes, platform in rows:
            Enrolment.objects.create(
                user=User.objects.create(username=username),
                batch=batch,
                platform=platform,
                worker_id=worker_id,
                platform_session_id=session_id,
                started_at=now + timedelta(minutes=minutes),
            )
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(AFTER)
    new = executor.loader.project_state(AFTER).apps
    got = {
        u: (e, p)
        for u, e, p in new.get_model("annotator", "Enrolment").objects.values_list(
            "user__username", "entry_session_id", "platform_session_id"
        )
    }
    MigrationExecutor(connection).migrate(executor.loader.graph.leaf_nodes())  # as the other tests expect
    assert got == {
        "first": ("S1", "S1"),
        "copycat": ("", "S1"),
        "other": ("S2", "S2"),
        "lab": ("", ""),
        "mturk": ("", "HIT"),
    }
