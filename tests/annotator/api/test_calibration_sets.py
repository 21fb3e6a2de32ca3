"""The calibration set through the API: researchers read, freeze and retire it; others are refused."""

import pytest

from annotator.judges.services.calibration_set import fingerprint
from annotator.models import CalibrationSet
from tests.annotator.api.conftest import assert_problem
from tests.factories import make_batch


@pytest.mark.django_db
def test_freeze_read_refuse_a_second_and_retire(api_as):
    batch = make_batch("api-cs", n_items=10)
    api = api_as("researcher")
    path = f"/batches/{batch.pk}/calibration-set"
    assert_problem(api.get(path), 404)
    bad = assert_problem(api.put(path, {"item_ids": ["api-cs-1", "ghost"]}), 422)
    assert "“ghost”" in bad["detail"] and not CalibrationSet.objects.exists()
    assert_problem(api.put(path, {"sample": 11}), 422)
    made = api.put(path, {"sample": 4, "seed": 3, "note": "pilot"})
    assert made.status_code == 201, made.content
    body = made.json()
    assert len(body["item_ids"]) == 4 and body["fingerprint"] == fingerprint(body["item_ids"])
    assert body["how"] == "random sample of 4, seed 3" and body["marked_by"] == "api-researcher"
    assert api.get(path).json() == body
    assert_problem(api.put(path, {"sample": 2}), 409)
    assert api.delete(path).status_code == 204
    assert_problem(api.delete(path), 404)


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["annotator", "anonymous"])  # admins are researchers too
def test_only_researchers(api_as, role):
    batch = make_batch("api-cs", n_items=3)
    api = api_as(role)
    path = f"/batches/{batch.pk}/calibration-set"
    response = api.put(path, {"sample": 2})
    assert response.status_code in (401, 403)
    assert not CalibrationSet.objects.exists()
    assert api.get(path).status_code in (401, 403)
