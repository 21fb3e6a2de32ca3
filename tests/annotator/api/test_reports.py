"""The report and the long annotations through the API: the export's numbers, the export's rows."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotator.models import Job
from tests.annotator.api.conftest import assert_problem
from tests.factories import make_annotation, make_batch, make_user

pytestmark = pytest.mark.django_db
DIMS = ["coherence", "relevance", "instruction_following", "safety_compliance", "fluency"]


@pytest.fixture
def rated(db):
    batch = make_batch("rated", n_items=6, k=3, systems=("base", "tuned"))
    users = [make_user(f"r{n}") for n in range(3)]
    for i, item in enumerate(batch.items.order_by("position")):
        for j, user in enumerate(users):
            values = {d: 1 + (i + j + n) % 5 for n, d in enumerate(DIMS)}
            make_annotation(item, user, values, submitted_at=timezone.now())
    return batch


def _export(batch, researcher, fmt):
    client = Client()
    client.force_login(researcher)
    response = client.get(reverse("report_export", args=[batch.pk, fmt]))
    return b"".join(response.streaming_content if response.streaming else [response.content]).decode()


def test_the_report_is_the_json_export(rated, api_as, researcher_user):
    body = api_as("researcher").get(f"/batches/{rated.pk}/report").json()
    assert body == json.loads(_export(rated, researcher_user, "json"))
    assert body["schema_version"] == 1 and body["n_annotations"] == 18
    assert body["bootstrap"]["resamples"] == 1000


def test_report_options_reach_the_report(rated, api_as):
    client = api_as("researcher")
    few = client.get(f"/batches/{rated.pk}/report", resamples=0, seed=7).json()
    assert few["bootstrap"] == {"resamples": 0, "seed": 7, "level": 0.95}
    assert few["dimensions"]["coherence"]["fleiss_kappa_ci95"] is None  # no resamples, no interval
    assert client.get(f"/batches/{rated.pk}/report", resamples=50).json()["dimensions"]["coherence"][
        "fleiss_kappa_ci95"
    ]


@pytest.mark.parametrize(
    "params", [{"epsilon": 1}, {"epsilon": -0.1}, {"resamples": -1}, {"resamples": "many"}]
)
def test_bad_report_options_are_422(rated, api_as, params):
    body = assert_problem(api_as("researcher").get(f"/batches/{rated.pk}/report", **params), 422)
    assert body["errors"][0]["column"] == next(iter(params)) and body["errors"][0]["in"] == "query"


def test_a_large_report_is_a_job_whose_result_is_the_report(
    rated, api_as, settings, django_capture_on_commit_callbacks
):
    settings.ANNOTATOR_BACKGROUND_REPORT_ITEMS = 3
    client = api_as("researcher")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.get(f"/batches/{rated.pk}/report", resamples=30, epsilon=0.1)
    assert response.status_code == 202
    job = client.get(response["Location"]).json()
    assert job["state"] == "done" and Job.objects.get().params["options"]["n_resamples"] == 30
    report = client.get(job["result_url"]).json()
    settings.ANNOTATOR_BACKGROUND_REPORT_ITEMS = 5000
    assert report == client.get(f"/batches/{rated.pk}/report", resamples=30, epsilon=0.1).json()


def test_annotations_pages_are_the_long_csv(rated, api_as, researcher_user):
    client = api_as("researcher")
    page = client.get(f"/batches/{rated.pk}/annotations", limit=4).json()
    rows, pages = list(page["items"]), 1
    assert len({r["annotation_id"] for r in rows}) == 4 and len(rows) == 4 * 5
    while page["next"]:
        page = client.get(page["next"]).json()
        rows += page["items"]
        pages += 1
    assert pages == 5  # 18 annotations, 4 a page
    assert len({r["annotation_id"] for r in rows}) == 18
    expected = list(csv.DictReader(io.StringIO(_export(rated, researcher_user, "scores.csv"))))
    got = [
        {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in r.items() if k != "annotation_id"}
        for r in rows
    ]  # JSON's false is the CSV's "false"
    assert got == expected  # the same rows, values and times (to the microsecond), in the same order


def test_annotations_with_equal_times_are_not_lost_between_pages(api_as):
    batch = make_batch("same-time", n_items=5)
    when = timezone.now()
    user = make_user("same")
    for item in batch.items.all():  # an import: one timestamp for every row
        make_annotation(item, user, {"coherence": 3}, submitted_at=when)
    client = api_as("researcher")
    seen, url = [], f"/batches/{batch.pk}/annotations?limit=2"
    while url:
        page = client.get(url).json()
        seen += [r["item_id"] for r in page["items"]]
        url = page["next"]
    assert seen == [f"same-time-{n}" for n in range(5)]


@pytest.mark.parametrize("cursor", ["garbage", "W10", "WyJ4IiwgMV0"])  # not base64 JSON / [] / ["x", 1]
def test_a_cursor_not_given_out_is_400(rated, api_as, cursor):
    body = assert_problem(api_as("researcher").get(f"/batches/{rated.pk}/annotations", cursor=cursor), 400)
    assert body["type"].endswith("bad-cursor")


def test_annotators_never_read_annotations_or_reports(rated, api_as):
    client = api_as("annotator")
    for path in (
        f"/batches/{rated.pk}/annotations",
        f"/batches/{rated.pk}/report",
        f"/batches/{rated.pk}/calibration",
    ):
        assert "researcher role" in assert_problem(client.get(path), 403)["detail"]
