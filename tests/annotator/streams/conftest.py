"""Stream test helpers: API clients per role, a stream, and traces to push."""

from __future__ import annotations

import datetime as dt

import pytest

from tests.annotator.api.conftest import ApiClient, token_for
from tests.factories import make_user

DIMENSIONS = ("coherence", "relevance", "instruction_following", "safety_compliance", "fluency")


@pytest.fixture
def api_as(db):
    made = {}

    def make(role: str) -> ApiClient:
        if role == "anonymous":
            return ApiClient()
        if role not in made:
            made[role] = make_user(f"api-{role}", role=role)
        return ApiClient(token_for(made[role]))

    return make


def trace(n: int, *, day: int = 1, hour: int = 12, score: float | None = 3.0, **extra) -> dict:
    """Trace number ``n``, on 2026-03-``day``, with judge j1's coherence score (None: no score)."""
    when = dt.datetime(2026, 3, day, hour, n % 60, tzinfo=dt.UTC)
    body = {
        "trace_id": f"t-{n}",
        "timestamp": when.isoformat(),
        "prompt": f"Question {n}?",
        "response": f"Answer {n}.",
    }
    if score is not None:
        body["judge_scores"] = [{"judge": "j1", "dimension": "coherence", "value": score}]
    return {**body, **extra}


@pytest.fixture
def stream(api_as):
    """A stream made through the API by a researcher: half the traces sampled, k = 3, daily windows."""
    client = api_as("researcher")
    response = client.post(
        "/streams", {"name": "prod-chat", "human_rate": 0.5, "k": 3, "window": "day", "judges": ["j1", "j2"]}
    )
    assert response.status_code == 201, response.content
    from annotator.models import Stream

    return Stream.objects.select_related("batch").get(name="prod-chat")
