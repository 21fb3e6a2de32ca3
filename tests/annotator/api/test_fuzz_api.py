"""Fuzzed request bodies to the API's writing routes: never a server error, every refusal is a
problem document, and a refused request saves nothing."""

from __future__ import annotations

import json

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from annotator.models import Batch, Item, JudgeScore
from tests.annotator.api.conftest import ApiClient, token_for
from tests.annotator.fuzz_support import FUZZ, NASTY, record, rolled_back, row_counts
from tests.factories import make_batch, make_user

pytestmark = pytest.mark.django_db

KEYS = [
    "item_id",
    "prompt",
    "response",
    "system_id",
    "prompt_id",
    "context",
    "expected_output",
    "constraints",
    "conversation",
    "metadata",
    "dimension",
    "score",
    "raw_output",
    "winner",
    "Item_ID",
    "__row__",
    "",
]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    st.sampled_from(NASTY),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
items = st.lists(st.one_of(st.dictionaries(st.sampled_from(KEYS), values, max_size=6), values), max_size=5)
jsonl = st.lists(
    st.one_of(
        st.sampled_from(["", "{", "[1]", "null", '{"item_id": "a", "prompt": "p", "response": "r"}']),
        st.text(max_size=30),
    ),
    max_size=4,
).map("\n".join)


@pytest.fixture
def admin_api(db, settings):
    settings.ANNOTATOR_API_RATE = "100000/min"  # the limit has its own test
    return ApiClient(token_for(make_user("fuzz-admin", role="admin")))


def _send(client, path, body):
    response = client.post(path, body)
    assert response.status_code < 500, response.content[:300]
    if response.status_code >= 400:
        assert response["Content-Type"] == "application/problem+json"
        assert json.loads(response.content)["status"] == response.status_code
    event(f"status {response.status_code}")
    return response


@FUZZ
@given(
    name=st.one_of(st.text(max_size=12), st.integers(), st.none()),
    k=st.one_of(st.integers(-2, 6), st.text(max_size=3)),
    source=st.one_of(
        st.fixed_dictionaries({"items": items}),
        st.fixed_dictionaries({"jsonl": jsonl}),
        st.fixed_dictionaries({"items": items, "jsonl": jsonl}),
        st.just({}),
    ),
)
def test_batch_creation_is_whole_or_nothing(admin_api, name, k, source):
    record("api batch create")
    with rolled_back():
        before = row_counts(Batch, Item)
        response = _send(admin_api, "/batches", {"name": name, "k": k, **source})
        if response.status_code == 201:
            created = Batch.objects.get(pk=response.json()["id"])
            assert created.items.count() == response.json()["n_items"] > 0
        else:
            assert row_counts(Batch, Item) == before


@FUZZ
@given(
    body=st.one_of(st.fixed_dictionaries({"items": items}), st.fixed_dictionaries({"jsonl": jsonl})),
    scale=st.sampled_from(["1-5", "0-1", "1-4", "5-1", 3]),
)
def test_judge_scores_are_whole_or_nothing(admin_api, body, scale):
    record("api judge scores")
    batch = Batch.objects.filter(name="fuzz-judged").first() or make_batch("fuzz-judged", n_items=3)
    with rolled_back():
        before = row_counts(JudgeScore, Item)
        response = _send(
            admin_api, "/judges/scores", {"batch_id": batch.pk, "judge": "j", "scale": scale, **body}
        )
        if response.status_code != 201:
            assert row_counts(JudgeScore, Item) == before


@FUZZ
@given(body=st.one_of(st.fixed_dictionaries({"items": items}), st.fixed_dictionaries({"jsonl": jsonl})))
def test_adding_items_is_whole_or_nothing(admin_api, body):
    record("api items add")
    batch = Batch.objects.filter(name="fuzz-grow").first() or make_batch("fuzz-grow", n_items=2)
    with rolled_back():
        before = batch.items.count()
        response = _send(admin_api, f"/batches/{batch.pk}/items", body)
        assert batch.items.count() == before + (
            response.json()["added"] if response.status_code == 201 else 0
        )


@pytest.mark.parametrize("name", ["\x00", "a\x00b", "two\nlines", "tab\there"])
def test_a_batch_name_with_a_control_character_is_refused_by_name(admin_api, name):
    # Found by the fuzz test above: a NUL in the name reached PostgreSQL (which stores none) as a 500.
    before = Batch.objects.count()
    response = admin_api.post(
        "/batches", {"name": name, "k": 3, "items": [{"item_id": "a", "prompt": "p", "response": "r"}]}
    )
    assert response.status_code == 422, response.content
    assert response["Content-Type"] == "application/problem+json"
    assert "control character" in response.content.decode()
    assert Batch.objects.count() == before
