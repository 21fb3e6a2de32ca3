"""Services catch the one constraint they mean: the lease race is retried, anything else surfaces."""

import pytest
from django.db import IntegrityError

from annotator.rating.services import assignment
from annotator.rating.services.assignment import AssignmentError, item_next_for_annotator
from annotator.services.integrity import integrity_message, violated_constraint
from tests.factories import make_batch, make_user

pytestmark = pytest.mark.django_db

LEASE_RACE = IntegrityError(
    "UNIQUE constraint failed: annotator_assignment.item_id, annotator_assignment.annotator_id"
)
OTHER = IntegrityError("CHECK constraint failed: score_value_1_to_5")


def test_sqlite_messages_map_to_constraint_names():
    assert violated_constraint(LEASE_RACE) == "assignment_once_per_item_annotator"
    assert violated_constraint(OTHER) == "score_value_1_to_5"
    assert violated_constraint(IntegrityError("NOT NULL constraint failed: annotator_item.prompt")) is None


def test_integrity_message_names_what_was_wrong():
    assert integrity_message(OTHER, {}) == (
        "The database refused the data (a score lies outside 1\u20135 (constraint score_value_1_to_5)); "
        "nothing was saved."
    )
    assert integrity_message(LEASE_RACE, {"assignment_once_per_item_annotator": "race"}) == "race"
    assert "NOT NULL constraint failed" in integrity_message(
        IntegrityError("NOT NULL constraint failed: x.y"), {}
    )


def test_the_lease_race_is_retried_but_another_integrity_error_is_not_hidden(monkeypatch):
    batch, user = make_batch(n_items=2), make_user("ann")
    calls = []

    def racing(**kwargs):
        calls.append(1)
        raise LEASE_RACE

    monkeypatch.setattr(assignment, "_lease_once", racing)
    with pytest.raises(AssignmentError, match="Could not hand out an item"):
        item_next_for_annotator(batch=batch, annotator=user)
    assert len(calls) == 3

    def broken(**kwargs):
        raise OTHER

    monkeypatch.setattr(assignment, "_lease_once", broken)
    with pytest.raises(IntegrityError, match="score_value_1_to_5"):
        item_next_for_annotator(batch=batch, annotator=user)
