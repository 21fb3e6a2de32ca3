"""The OpenAPI document is valid OpenAPI 3, names every route and its errors; the docs page loads
nothing from outside the app."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse
from openapi_spec_validator import validate

from tests.annotator.test_access_matrix import app_url_patterns

pytestmark = pytest.mark.django_db


@pytest.fixture
def schema():
    response = Client().get("/api/v1/openapi.json")
    assert response.status_code == 200
    return response.json()


def test_the_schema_is_valid_openapi(schema):
    validate(schema)  # raises on any violation of the OpenAPI 3.x specification
    assert schema["openapi"].startswith("3.") and schema["info"]["version"] == "1"
    assert schema["components"]["securitySchemes"] == {"ApiAuth": {"type": "http", "scheme": "bearer"}}


def test_every_api_route_is_documented_with_problem_responses(schema):
    routes = {
        "/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route)
        for name, route, _ in app_url_patterns()
        if name
        and name.startswith("api-v1:")
        and name not in ("api-v1:openapi-json", "api-v1:openapi-view", "api-v1:api-root")
    }
    assert routes == set(schema["paths"])
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            assert operation["security"] == [{"ApiAuth": []}], (method, path)
            for status in ("401", "403"):
                assert status in operation["responses"], (method, path, status)
                assert list(operation["responses"][status]["content"]) == ["application/problem+json"]


def test_contract_shapes(schema):
    create = schema["paths"]["/api/v1/batches"]["post"]
    assert {"201", "202", "422"} <= set(create["responses"])
    body = schema["components"]["schemas"]["BatchCreateIn"]["properties"]
    assert {"name", "k", "rubric", "items", "jsonl"} <= set(body)
    report = schema["paths"]["/api/v1/batches/{batch_id}/report"]["get"]
    assert {p["name"] for p in report["parameters"]} >= {"batch_id", "epsilon", "resamples"}
    annotations = schema["paths"]["/api/v1/batches/{batch_id}/annotations"]["get"]
    assert {p["name"] for p in annotations["parameters"]} >= {"cursor", "limit"}


def test_the_docs_page_uses_only_the_apps_own_assets(client):
    page = client.get("/api/v1/docs")
    assert page.status_code == 200
    html = page.content.decode()
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert assets and not [a for a in assets if "//" in a]  # no CDN, no other host
    assert reverse("api-v1:openapi-json") in html
    for asset in assets:
        served = client.get(asset)
        assert served.status_code == 200, asset
        assert b"".join(served.streaming_content if served.streaming else [served.content])
