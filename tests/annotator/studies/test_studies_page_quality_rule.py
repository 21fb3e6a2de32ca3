"""The Studies page sets a batch's training and attention checks (its quality rule) for every admin,
superuser or not: the Django admin, where the rule lived before, is closed to admins who are staff only."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from annotator.models import GoldItem, QualityRule
from tests.factories import PASSWORD, make_batch, make_gold_items, make_user

pytestmark = pytest.mark.django_db


def _form(**changes):
    values = {
        "training_items": "0",
        "training_max_mae": "0.75",
        "check_every": "4",
        "check_warn_below": "0.8",
        "check_block_below": "0.5",
        "check_min_answered": "3",
        "min_seconds": "3",
        "window": "50",
    }
    values.update({k: str(v) for k, v in changes.items()})
    return values


def _post(client, batch, **changes):
    data = {f"quality-{batch.pk}-{k}": v for k, v in _form(**changes).items()}
    return client.post(reverse("study_quality", args=[batch.pk]), data)


def _gold(batch, kind, n):
    make_gold_items(batch, kind, n, response="r", scores={"coherence": 3})


@pytest.fixture
def staff_admin():
    user = make_user("staff-admin", role="admin")
    assert not user.is_superuser
    client = Client()
    client.login(username=user.username, password=PASSWORD)
    return client


def test_an_admin_who_is_not_a_superuser_sets_training_and_checks(staff_admin):
    batch = make_batch("ruled", n_items=2)
    _gold(batch, GoldItem.Kind.TRAINING, 2)
    page = staff_admin.get(reverse("studies")).content.decode()
    assert reverse("study_quality", args=[batch.pk]) in page and "one check in every 10 items" in page
    response = _post(staff_admin, batch, training_items=2, check_every=4)
    assert response.status_code == 302
    rule = QualityRule.objects.get(batch=batch)
    assert (rule.training_items, rule.check_every, rule.check_block_below) == (2, 4, 0.5)
    assert (
        "2 training items first, then one check in every 4 items"
        in staff_admin.get(reverse("studies")).content.decode()
    )
    # Saving again changes the same rule.
    assert _post(staff_admin, batch, check_every=7).status_code == 302
    assert QualityRule.objects.get(batch=batch).check_every == 7


@pytest.mark.parametrize(
    "changes, field, message",
    [
        ({"training_items": 3}, "training_items", "The batch has 2 training items"),
        ({"check_block_below": 0.9}, "check_block_below", "at or below the warning"),
        ({"check_every": 1}, "check_every", "greater than or equal to 2"),
        ({"check_warn_below": 1.5}, "check_warn_below", "less than or equal to 1"),
        ({"window": "many"}, "window", "Enter a whole number"),
    ],
)
def test_a_bad_rule_is_refused_with_the_reason_and_saves_nothing(staff_admin, changes, field, message):
    batch = make_batch("ruled", n_items=2)
    _gold(batch, GoldItem.Kind.TRAINING, 2)
    response = _post(staff_admin, batch, **changes)
    assert response.status_code == 422 and message in response.content.decode()
    assert "were not saved: see the form below" in response.content.decode()  # said at the top too
    assert not QualityRule.objects.filter(batch=batch).exists()
    # The typed values are kept in the form that says what is wrong.
    assert f'name="quality-{batch.pk}-{field}"' in response.content.decode()


def test_annotators_and_researchers_cannot_set_it():
    batch = make_batch("ruled", n_items=2)
    for role in ("annotator", "researcher"):
        client = Client()
        client.login(username=make_user(f"u-{role}", role=role).username, password=PASSWORD)
        assert _post(client, batch, check_every=3).status_code in (302, 403)
    assert not QualityRule.objects.filter(batch=batch).exists()
