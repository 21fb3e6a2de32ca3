"""Shared fixtures."""

import pytest

from tests.factories import make_user


@pytest.fixture
def annotator_user(db):
    return make_user("ann1", role="annotator")


@pytest.fixture
def researcher_user(db):
    return make_user("res1", role="researcher")


@pytest.fixture
def admin_user(db):
    return make_user("admin1", role="admin")
