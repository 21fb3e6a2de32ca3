"""Fixtures shared with the API tests."""

from tests.annotator.api.conftest import api_as  # noqa: F401 (a fixture, found by name)
