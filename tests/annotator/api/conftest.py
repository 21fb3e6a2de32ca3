"""API test helpers: a client per role that authenticates with its own API token."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from annotator.services.api_tokens import api_token_create
from tests.factories import make_user


class ApiClient:
    """The Django test client with a Bearer token, JSON bodies and ``/api/v1`` paths."""

    def __init__(self, key: str | None = None, **client_options):
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.client = Client(headers=headers, **client_options)

    def get(self, path: str, **params):
        return self.client.get(_url(path), params)

    def post(self, path: str, body=None):
        return self.client.post(
            _url(path), data=json.dumps(body if body is not None else {}), content_type="application/json"
        )

    def put(self, path: str, body=None):
        return self.client.put(
            _url(path), data=json.dumps(body if body is not None else {}), content_type="application/json"
        )

    def delete(self, path: str):
        return self.client.delete(_url(path))


def _url(path: str) -> str:
    return path if path.startswith(("/api/", "http")) else "/api/v1" + path


def token_for(user, days: int = 30) -> str:
    return api_token_create(user=user, name="tests", days=days)[1]


@pytest.fixture
def api_as(db):
    """``api_as("researcher")``: a client whose token belongs to a new user of that role."""
    made = {}

    def make(role: str) -> ApiClient:
        if role == "anonymous":
            return ApiClient()
        if role not in made:
            made[role] = make_user(f"api-{role}", role=role)
        return ApiClient(token_for(made[role]))

    return make


def assert_problem(response, status: int) -> dict:
    assert response.status_code == status, response.content[:500]
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert body["status"] == status
    assert {"type", "title", "status", "detail", "instance"} <= set(body)
    return body
