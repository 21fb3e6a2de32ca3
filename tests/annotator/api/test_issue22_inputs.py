"""Inputs that answered 500: each is a problem (4xx) or a page saying what to change."""

from __future__ import annotations

import json

import pytest

from annotator.api.pagination import encode_cursor
from annotator.models import Annotation, Batch, CalibrationSet, Judge
from tests.annotator.api.conftest import assert_problem
from tests.factories import make_annotation, make_batch, make_user

pytestmark = pytest.mark.django_db

SCORES = {"constraint_compliance": 4, "relevance": 4, "informativeness": 3, "structure": 4, "fluency": 5}


def test_annotations_of_a_batch_with_none_is_an_empty_page(api_as):
    batch = make_batch(n_items=2)
    response = api_as("researcher").get(f"/batches/{batch.pk}/annotations")
    assert response.status_code == 200, response.content
    assert response.json() == {"items": [], "next_cursor": None, "next": None}


def test_a_cursor_past_the_end_is_an_empty_page(api_as):
    batch = make_batch(n_items=2)
    annotator = make_user("ann")
    for item in batch.items.all():
        make_annotation(item, annotator, SCORES)
    client = api_as("researcher")
    last = Annotation.objects.order_by("submitted_at", "id").last()
    response = client.get(
        f"/batches/{batch.pk}/annotations", cursor=encode_cursor([last.submitted_at.isoformat(), last.pk])
    )
    assert response.status_code == 200, response.content
    assert response.json() == {"items": [], "next_cursor": None, "next": None}
    later = client.get(
        f"/batches/{batch.pk}/annotations", cursor=encode_cursor(["2999-01-01T00:00:00+00:00", 1])
    )
    assert later.status_code == 200 and later.json()["items"] == []


@pytest.mark.parametrize("path", ["report", "calibration"])
def test_a_negative_seed_is_a_problem_naming_it(api_as, path):
    batch = make_batch(n_items=3)
    annotator = make_user("ann")
    for item in batch.items.all():
        make_annotation(item, annotator, SCORES)
    body = assert_problem(api_as("researcher").get(f"/batches/{batch.pk}/{path}", seed=-1), 422)
    assert "seed" in body["detail"]


def test_a_seed_too_large_for_the_report_is_a_problem(api_as):
    batch = make_batch(n_items=3)
    body = assert_problem(api_as("researcher").get(f"/batches/{batch.pk}/report", seed=2**64), 422)
    assert "seed" in body["detail"]


LONE = "\ud800"


def _raw_post(client, path: str, body: dict):
    """The body as the JSON a client sends: ``json.dumps`` writes a lone surrogate as the escape ``\\ud800``."""
    return client.client.post("/api/v1" + path, data=json.dumps(body), content_type="application/json")


def test_a_lone_surrogate_in_item_text_is_a_problem_naming_the_row(api_as):
    items = [
        {"item_id": "a-1", "prompt": "p", "response": "fine"},
        {"item_id": "a-2", "prompt": "p", "response": f"broken {LONE} text"},
    ]
    body = assert_problem(_raw_post(api_as("admin"), "/batches", {"name": "s", "items": items}), 400)
    assert not Batch.objects.filter(name="s").exists()
    assert "lone surrogate" in body["detail"] and "$.items[1].response" in body["detail"]


def test_a_surrogate_pair_is_a_character_and_is_saved(api_as):
    # json.dumps writes the two halves as two escapes, which JSON decodes into one character.
    items = [{"item_id": "a-1", "prompt": "p", "response": "smile \ud83d\ude00"}]
    response = _raw_post(api_as("admin"), "/batches", {"name": "pair", "items": items, "k": 3})
    assert response.status_code == 201, response.content
    assert Batch.objects.get(name="pair").items.get().response == "smile \U0001f600"


def test_a_lone_surrogate_in_jsonl_text_is_a_row_error(api_as):
    jsonl = '{"item_id": "a-1", "prompt": "p", "response": "fine"}\n{"item_id": "a-2", "prompt": "p", "response": "x\\ud800"}'
    body = assert_problem(api_as("admin").post("/batches", {"name": "s", "jsonl": jsonl}), 422)
    assert [(e["row"], e["column"]) for e in body["errors"]] == [(2, "response")]
    assert "surrogate" in body["errors"][0]["message"]
    assert not Batch.objects.filter(name="s").exists()


def test_a_lone_surrogate_in_a_judge_name_is_a_problem(api_as):
    batch = make_batch(n_items=2)
    item = batch.items.first()
    response = _raw_post(
        api_as("researcher"),
        "/judges/scores",
        {
            "batch_id": batch.pk,
            "judge": f"judge{LONE}",
            "scale": "1-5",
            "items": [{"item_id": item.item_id, "dimension": "fluency", "score": 4}],
        },
    )
    body = assert_problem(response, 400)
    assert "surrogate" in body["detail"] and not Judge.objects.exists()


def test_a_body_that_is_not_json_says_so(api_as):
    response = api_as("admin").client.post(
        "/api/v1/batches", data=b"{not json", content_type="application/json"
    )
    body = assert_problem(response, 400)
    assert "not valid JSON" in body["detail"]
    unterminated = api_as("admin").client.post(
        "/api/v1/batches", data=b'{"name": "x', content_type="application/json"
    )
    detail = assert_problem(unterminated, 400)["detail"]
    assert "(Unterminated string starting at line 1, column 10)" in detail, detail  # "at" once


def test_a_nul_in_a_calibration_set_note_is_a_problem(api_as):
    batch = make_batch(n_items=3)
    response = api_as("researcher").put(
        f"/batches/{batch.pk}/calibration-set", {"sample": 2, "note": "a\x00b"}
    )
    body = assert_problem(response, 422)
    assert "NUL" in body["detail"] and not CalibrationSet.objects.exists()


def test_a_refusal_detail_is_one_sentence(api_as):
    bad = [{"item_id": "x", "prompt": "", "response": "r"}, {"item_id": "y", "prompt": "p", "response": ""}]
    body = assert_problem(api_as("admin").post("/batches", {"name": "", "items": bad}), 422)
    assert ".;" not in body["detail"] and ".." not in body["detail"]
    assert body["detail"].endswith("Nothing was saved.")
    assert body["detail"] == (
        "The batch needs a name; line 1, key `prompt`: is empty; "
        "line 2, key `response`: is empty. Nothing was saved."
    )
