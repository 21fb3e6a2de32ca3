"""Fixtures shared by the judge tests: the API clients, and a researcher on the Judges page."""

import pytest

from tests.annotator.api.conftest import api_as  # noqa: F401 (a fixture, found by name)
from tests.factories import make_user


@pytest.fixture
def researcher(client, monkeypatch):
    """The test client signed in as a researcher, with a judge key in the environment (runs from the page)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-web-123456789")
    client.force_login(make_user("res", role="researcher"))
    return client
