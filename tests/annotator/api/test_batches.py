"""Batches through the API: the upload's columns, checks and row-numbered errors, all or nothing."""

from __future__ import annotations

import json

import pytest

from annotator.models import Batch, Item, Job
from annotator.uploads.files.batch_file import parse_batch_file
from tests.annotator.api.conftest import assert_problem
from tests.factories import make_annotation, make_batch, make_user

pytestmark = pytest.mark.django_db

ITEMS = [
    {
        "item_id": "air-1",
        "prompt": "Plan a route to the airport avoiding tolls.",
        "response": "Take Route 9.",
        "system_id": "navigator-v2",
        "constraints": ["avoid tolls"],
        "run": "42",
    },
    {
        "item_id": "air-2",
        "prompt": "Plan a route to the airport avoiding tolls.",
        "response": "Take the expressway.",
        "system_id": "baseline",
        "conversation": [{"role": "user", "content": "by 7"}],
    },
]


def test_create_from_items_saves_them_like_an_upload(api_as):
    response = api_as("admin").post("/batches", {"name": "run 42", "k": 4, "items": ITEMS})
    assert response.status_code == 201, response.content
    body = response.json()
    batch = Batch.objects.get(name="run 42")
    assert body["id"] == batch.pk and body["k"] == 4 and body["n_items"] == 2
    assert response["Location"] == body["url"] and body["url"].endswith(f"/api/v1/batches/{batch.pk}")
    first, second = batch.items.order_by("position")
    assert (first.item_id, first.system_id, first.constraints) == ("air-1", "navigator-v2", ["avoid tolls"])
    assert first.metadata == {"run": "42"}  # an unknown key is kept in the metadata, as in a file
    assert second.conversation == [{"role": "user", "content": "by 7"}]
    assert first.prompt_id == second.prompt_id  # the same prompt text groups the systems


def test_create_from_jsonl_text(api_as):
    jsonl = "\n".join(json.dumps(item) for item in ITEMS)
    response = api_as("admin").post("/batches", {"name": "from jsonl", "jsonl": jsonl})
    assert response.status_code == 201
    assert Batch.objects.get(name="from jsonl").k == 3  # the default
    assert Item.objects.filter(batch__name="from jsonl").count() == 2


def test_bad_items_save_nothing_and_are_numbered_as_the_upload_numbers_them(api_as):
    bad = [
        ITEMS[0],
        {"item_id": "air-1", "prompt": "", "response": "x"},
        "not an object",
        {"item_id": "air-4", "prompt": "p", "response": "r", "conversation": "[1]"},
    ]
    response = api_as("admin").post("/batches", {"name": "bad", "items": bad})
    body = assert_problem(response, 422)
    assert body["type"].endswith("invalid-rows")
    assert not Batch.objects.filter(name="bad").exists() and not Item.objects.exists()
    # Exactly the errors the upload reports for the same items as a JSONL file.
    as_file = "\n".join(json.dumps(item) for item in bad).encode()
    expected = [
        {"row": e.row, "column": e.column, "message": e.message}
        for e in sorted(parse_batch_file(as_file, filename="x.jsonl").errors, key=lambda e: e.sort_key)
    ]
    assert body["errors"] == expected
    assert {(e["row"], e["column"]) for e in body["errors"]} == {
        (2, "item_id"),
        (2, "prompt"),
        (3, None),
        (4, "conversation"),
    }


def test_taken_name_and_small_k_are_refused_with_the_items_problems(api_as):
    make_batch("taken", n_items=1)
    response = api_as("admin").post("/batches", {"name": "taken", "k": 2, "items": [{"item_id": "x"}]})
    body = assert_problem(response, 422)
    messages = [e["message"] for e in body["errors"]]
    assert any("already exists" in m for m in messages) and any("k = 2" in m for m in messages)
    assert any(e["column"] == "prompt" for e in body["errors"])  # the items were checked too


@pytest.mark.parametrize(
    "body, where",
    [
        ({"name": "x"}, None),  # neither items nor jsonl
        ({"name": "x", "items": [], "jsonl": "{}"}, None),  # both
        ({"items": ITEMS}, "name"),
        ({"name": "x", "k": "three", "items": ITEMS}, "k"),
    ],
)
def test_a_body_off_the_schema_is_a_problem_naming_the_field(api_as, body, where):
    problem = assert_problem(api_as("admin").post("/batches", body), 422)
    assert problem["type"].endswith("invalid-request")
    if where:
        assert any(e["column"] == where for e in problem["errors"]), problem["errors"]
    assert not Batch.objects.exists()


def test_a_bad_rubric_is_refused(api_as):
    problem = assert_problem(
        api_as("admin").post("/batches", {"name": "r", "rubric": {"name": "x"}, "items": ITEMS}), 422
    )
    assert "not a valid rubric" in problem["detail"]


def test_unreadable_jsonl_is_a_400(api_as):
    problem = assert_problem(api_as("admin").post("/batches", {"name": "r", "jsonl": "   "}), 400)
    assert "empty" in problem["detail"]


def test_add_items_to_an_open_batch(api_as):
    batch = make_batch("grow", n_items=2)
    new = [
        {"item_id": "new-1", "prompt": "p", "response": "r"},
        {"item_id": "new-2", "prompt": "p", "response": "s"},
    ]
    response = api_as("admin").post(f"/batches/{batch.pk}/items", {"items": new})
    assert response.status_code == 201, response.content
    assert response.json()["added"] == 2 and response.json()["batch"]["n_items"] == 4
    positions = list(batch.items.order_by("position").values_list("item_id", "position"))
    assert positions[-2:] == [("new-1", 2), ("new-2", 3)]  # after the items it had


def test_adding_an_item_id_the_batch_has_refuses_all(api_as):
    batch = make_batch("grow", n_items=2)
    new = [
        {"item_id": "fresh", "prompt": "p", "response": "r"},
        {"item_id": "grow-1", "prompt": "p", "response": "r"},
    ]
    body = assert_problem(api_as("admin").post(f"/batches/{batch.pk}/items", {"items": new}), 422)
    assert body["errors"] == [{"row": 2, "column": "item_id", "message": "`grow-1` is already in the batch"}]
    assert batch.items.count() == 2


def test_a_closed_batch_takes_no_items(api_as):
    batch = make_batch("closed", n_items=1)
    Batch.objects.filter(pk=batch.pk).update(is_open=False)
    body = assert_problem(api_as("admin").post(f"/batches/{batch.pk}/items", {"items": ITEMS}), 409)
    assert body["type"].endswith("batch-closed") and "closed" in body["detail"]
    assert batch.items.count() == 1


def test_a_large_batch_is_saved_by_a_job_to_poll(api_as, settings, django_capture_on_commit_callbacks):
    settings.ANNOTATOR_BACKGROUND_UPLOAD_BYTES = 100  # these items are larger
    client = api_as("admin")
    with django_capture_on_commit_callbacks(execute=False) as queued:
        response = client.post("/batches", {"name": "big", "items": ITEMS})
    assert response.status_code == 202, response.content
    job = response.json()
    assert response["Location"] == job["url"]
    assert job["state"] == "queued" and job["result_url"] is None
    assert not Batch.objects.filter(name="big").exists()
    assert_problem(client.get(job["url"] + "/result"), 409)  # not finished yet
    for callback in queued:  # the worker runs it (the test settings run tasks at once)
        callback()
    polled = client.get(job["url"]).json()
    assert polled["state"] == "done", polled
    result = client.get(polled["result_url"]).json()
    assert result["batch"]["name"] == "big" and result["batch"]["n_items"] == 2
    assert Item.objects.filter(batch__name="big").count() == 2


def test_a_large_bad_batch_fails_its_job_with_the_row_errors(
    api_as, settings, django_capture_on_commit_callbacks
):
    settings.ANNOTATOR_BACKGROUND_UPLOAD_BYTES = 10
    client = api_as("admin")
    with django_capture_on_commit_callbacks(execute=True):
        job = client.post(
            "/batches", {"name": "big-bad", "items": [ITEMS[0], {"item_id": "y", "prompt": "p"}]}
        ).json()
    polled = client.get(job["url"]).json()
    assert polled["state"] == "failed" and polled["result_url"] is None
    assert polled["errors"] == [{"row": 2, "column": "response", "message": "is empty"}]
    assert not Batch.objects.filter(name="big-bad").exists()
    assert_problem(client.get(job["url"] + "/result"), 409)


def test_a_job_is_its_owners_only(api_as, settings):
    settings.ANNOTATOR_BACKGROUND_UPLOAD_BYTES = 10
    job = api_as("admin").post("/batches", {"name": "mine", "items": ITEMS}).json()
    other = api_as("researcher")
    assert_problem(other.get(job["url"]), 404)
    assert Job.objects.count() == 1


def test_progress_counts_items_and_annotations(api_as):
    batch = make_batch("prog", n_items=3, k=3)
    items = list(batch.items.order_by("position"))
    for n in range(3):
        make_annotation(items[0], make_user(f"p{n}"), {"coherence": 3})
    make_annotation(items[1], make_user("p9"), {"coherence": 4})
    body = api_as("researcher").get(f"/batches/{batch.pk}/progress").json()
    assert body == {
        "batch_id": batch.pk,
        "name": "prog",
        "is_open": True,
        "k": 3,
        "n_items": 3,
        "items_complete": 1,
        "items_leased": 0,
        "items_open": 2,
        "annotations_submitted": 4,
        "annotations_needed": 9,
        "percent_complete": 33.3,
        "done": False,
    }


def test_batches_are_listed_with_cursors(api_as):
    for n in range(5):
        make_batch(f"list-{n}", n_items=n + 1)
    client = api_as("researcher")
    page = client.get("/batches", limit=2).json()
    seen = [b["name"] for b in page["items"]]
    while page["next"]:
        page = client.get(page["next"]).json()
        seen += [b["name"] for b in page["items"]]
    assert seen == [f"list-{n}" for n in range(5)]
    assert [b["n_items"] for b in client.get("/batches").json()["items"]] == [1, 2, 3, 4, 5]


def test_unknown_batch_is_a_404_problem(api_as):
    assert_problem(api_as("researcher").get("/batches/999999/progress"), 404)


def test_many_items_for_a_batch_are_added_by_a_job(api_as, settings, django_capture_on_commit_callbacks):
    settings.ANNOTATOR_BACKGROUND_UPLOAD_BYTES = 10
    batch = make_batch("grow-big", n_items=1)
    client = api_as("admin")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/batches/{batch.pk}/items", {"items": ITEMS})
    assert response.status_code == 202
    job = client.get(response["Location"]).json()
    assert job["state"] == "done" and "Added 2 items" in job["message"]
    assert client.get(job["result_url"]).json()["batch"]["n_items"] == 3
    Batch.objects.filter(pk=batch.pk).update(is_open=False)
    assert_problem(client.post(f"/batches/{batch.pk}/items", {"items": ITEMS}), 409)  # closed: no job at all
    assert Job.objects.count() == 1
