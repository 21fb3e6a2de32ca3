"""The rating hooks: every listed hook has every method the rating package calls, and the study's
hook is the one that sends a crowd worker to the consent page before any item."""

from __future__ import annotations

import inspect

import pytest
from django.utils.module_loading import import_string

from annotator.models import Enrolment
from annotator.rating import hooks
from annotator.rating.selectors.facts import rating_facts_for_batch
from tests.annotator.study_support import PID_A, arrive, prolific_link
from tests.factories import make_batch

METHODS = sorted(
    name
    for name, member in vars(hooks.RatingHooks).items()
    if inspect.isfunction(member) and not name.startswith("_")
)


def test_the_protocol_names_what_the_rating_package_calls():
    assert METHODS == [
        "annotator_stopped",
        "before_rating",
        "labels_changed",
        "nothing_left",
        "session",
        "visit_over",
        "workers",
    ]


@pytest.mark.parametrize("path", hooks.RATING_HOOKS)
def test_every_listed_hook_has_every_method(path):
    hook = import_string(path)
    missing = [name for name in METHODS if not callable(getattr(hook, name, None))]
    assert missing == []
    for name in METHODS:
        expected = inspect.signature(getattr(hooks.RatingHooks, name)).parameters
        assert list(inspect.signature(getattr(hook, name)).parameters) == list(expected), name


@pytest.mark.django_db
def test_a_crowd_worker_is_sent_to_the_consent_first():
    batch = make_batch("hooked", n_items=2)
    batch.consent_text = "I agree."
    batch.save()
    _link, token = prolific_link(batch)
    arrive(token, PID_A)
    user = Enrolment.objects.get(worker_id=PID_A).user
    facts = rating_facts_for_batch(user=user, batch_id=batch.pk)
    assert hooks.before_rating(user=user, facts=facts) == hooks.Detour("study_consent")
    assert hooks.session(facts=facts) == hooks.Session(quota=2, deadline=None)
    assert hooks.visit_over(user=user, batch_id=batch.pk) is False
