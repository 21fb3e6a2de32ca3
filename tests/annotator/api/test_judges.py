"""LLM judges through the API: the file import's parsing and errors, the report's calibration."""

from __future__ import annotations

import json

import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from annotator.judges.services.judges import judge_scores_import
from annotator.models import JudgeScore, PairwiseVerdict
from annotator.uploads.files.errors import ImportRefused
from hcs.judge_output import JudgeScale
from tests.annotator.api.conftest import assert_problem
from tests.annotator.judges.test_judges_selector import _study

pytestmark = pytest.mark.django_db


@pytest.fixture
def study(db):
    batch, _truth, human = _study(n_items=36, systems=("base", "tuned"))
    consensus = {item: float(np.mean(list(r.values()))) for item, r in human.items()}
    return batch, consensus


def _scores(consensus, scale_max=5):
    return [
        {"item_id": item, "dimension": "coherence", "score": value * scale_max / 5, "reason": "ok"}
        for item, value in consensus.items()
    ]


def test_import_scores_then_read_calibration(study, api_as):
    batch, consensus = study
    client = api_as("researcher")
    response = client.post(
        "/judges/scores",
        {
            "batch_id": batch.pk,
            "judge": "gpt-judge",
            "scale": "1-5",
            "model": "gpt-x",
            "items": _scores(consensus),
        },
    )
    assert response.status_code == 201, response.content
    assert response.json() == {"judge": "gpt-judge", "batch_id": batch.pk, "imported": 36}
    assert JudgeScore.objects.filter(judge__name="gpt-judge", judge__model="gpt-x").count() == 36
    listed = client.get("/judges").json()
    url = f"http://testserver/api/v1/batches/{batch.pk}/calibration"
    assert listed == [
        {
            "name": "gpt-judge",
            "model": "gpt-x",
            "template": "",
            "n_scores": 36,
            "n_verdicts": 0,
            "n_failures": 0,
            "n_batches": 1,
            "batches": [{"id": batch.pk, "name": batch.name, "calibration_url": url}],
        }
    ]
    calibration = client.get(listed[0]["batches"][0]["calibration_url"], resamples=50, epsilon=0.1).json()
    report = client.get(f"/batches/{batch.pk}/report", resamples=50, epsilon=0.1).json()
    assert calibration == {"batch_id": batch.pk, "judges": report["judges"], "judge_pairwise": {}}
    coherence = calibration["judges"]["gpt-judge"]["coherence"]
    assert coherence["n"] == 36 and coherence["spearman"] > 0.9  # the judge is the people's mean
    assert coherence["alt_test"]["epsilon"] == 0.1 and coherence["alt_test"]["passed"] is True


def test_raw_output_is_read_like_the_file_import(study, api_as):
    batch, consensus = study
    items = [
        {
            "item_id": item,
            "dimension": "overall",
            "raw_output": f'Sure. ```json\n{{"score": {value / 5:.2f}}}\n```',
        }
        for item, value in consensus.items()
    ]
    response = api_as("researcher").post(
        "/judges/scores", {"batch_id": batch.pk, "judge": "fenced", "scale": "0-1", "items": items}
    )
    assert response.status_code == 201, response.content
    stored = JudgeScore.objects.filter(judge__name="fenced").order_by("item__position").first()
    assert stored.raw_value == pytest.approx(round(consensus[stored.item.item_id] / 5, 2))
    assert stored.value == pytest.approx(1 + 4 * stored.raw_value)  # 0–1 mapped onto 1–5


def test_bad_score_rows_save_nothing_with_the_file_imports_errors(study, api_as):
    batch, consensus = study
    first = next(iter(consensus))
    items = _scores(consensus)[:2] + [
        {"item_id": "nope", "dimension": "coherence", "score": 3},
        {"item_id": first, "dimension": "wit", "score": 3},
        {"item_id": first, "dimension": "fluency", "score": 9},
    ]
    body = assert_problem(
        api_as("researcher").post(
            "/judges/scores", {"batch_id": batch.pk, "judge": "j", "scale": "1-5", "items": items}
        ),
        422,
    )
    assert not JudgeScore.objects.exists()
    as_file = "\n".join(json.dumps(i) for i in items).encode()
    with pytest.raises(ImportRefused) as refused:
        judge_scores_import(
            batch=batch, judge_name="j", data=as_file, filename="x.jsonl", scale=JudgeScale.parse("1-5")
        )
    assert body["errors"] == [
        {"row": e.row, "column": e.column, "message": e.message}
        for e in sorted(refused.value.errors, key=lambda e: e.sort_key)
    ]
    assert [e["row"] for e in body["errors"]] == [3, 4, 5]


def test_the_same_import_through_the_page_and_the_api_gives_the_same_errors(study, api_as, researcher_user):
    batch, _ = study
    items = [{"item_id": "missing", "dimension": "coherence", "score": 2}]
    api = assert_problem(
        api_as("researcher").post(
            "/judges/scores", {"batch_id": batch.pk, "judge": "j", "scale": "1-5", "items": items}
        ),
        422,
    )
    page = Client()
    page.force_login(researcher_user)
    upload = SimpleUploadedFile("s.jsonl", json.dumps(items[0]).encode())
    response = page.post(
        reverse("judge_import_scores"), {"batch": batch.name, "judge": "j", "scale": "1-5", "file": upload}
    )
    assert response.status_code == 400
    assert [str(e) for e in response.context["errors"]] == [
        f"line {e['row']}, key `{e['column']}`: {e['message']}" for e in api["errors"]
    ]


def test_import_verdicts(study, api_as):
    batch, _ = study
    pairs = {}
    for item in batch.items.order_by("position"):
        pairs.setdefault(item.prompt_id, {})[item.system_id] = item.item_id
    items = [{"prompt_id": p, "winner": "enhanced", "confidence": 0.9} for p in pairs]
    client = api_as("researcher")
    response = client.post(
        "/judges/verdicts",
        {"batch_id": batch.pk, "judge": "pairwise", "baseline_system": "base", "items": items},
    )
    assert response.status_code == 201, response.content
    assert response.json()["imported"] == 18 == PairwiseVerdict.objects.count()
    first = PairwiseVerdict.objects.select_related("baseline", "enhanced").first()
    assert (first.baseline.system_id, first.enhanced.system_id) == ("base", "tuned")
    calibration = client.get(f"/batches/{batch.pk}/calibration", resamples=0).json()
    assert calibration["judge_pairwise"]["pairwise"]["n"] == 18
    (listed,) = client.get("/judges").json()  # a judge with verdicts only still lists its batch
    assert (listed["n_verdicts"], [b["id"] for b in listed["batches"]]) == (18, [batch.pk])


def test_verdicts_without_a_baseline_are_row_errors(study, api_as):
    batch, _ = study
    prompt = batch.items.first().prompt_id
    body = assert_problem(
        api_as("researcher").post(
            "/judges/verdicts",
            {"batch_id": batch.pk, "judge": "p", "items": [{"prompt_id": prompt, "winner": "tie"}]},
        ),
        422,
    )
    assert body["errors"][0]["row"] == 1 and "baseline" in body["errors"][0]["message"]
    assert not PairwiseVerdict.objects.exists()


def test_an_unknown_scale_is_refused_by_the_schema(study, api_as):
    batch, consensus = study
    body = assert_problem(
        api_as("researcher").post(
            "/judges/scores",
            {"batch_id": batch.pk, "judge": "j", "scale": "0-10", "items": _scores(consensus)},
        ),
        422,
    )
    assert body["errors"][0]["column"] == "scale"


def test_annotators_cannot_import_or_list_judges(study, api_as):
    batch, consensus = study
    client = api_as("annotator")
    assert_problem(client.get("/judges"), 403)
    assert_problem(
        client.post(
            "/judges/scores",
            {"batch_id": batch.pk, "judge": "j", "scale": "1-5", "items": _scores(consensus)},
        ),
        403,
    )
    assert not JudgeScore.objects.exists()
