"""Item-level judge data leaves the app: judge_scores.csv, pairwise_verdicts.csv and judge_calls.jsonl
through export_report, the report page and the background job, and the API's cursor pages."""

from __future__ import annotations

import csv
import io
import json
from urllib.parse import urlsplit

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotator.judges.exports.tables import (
    JUDGE_SCORES_COLUMNS,
    PAIRWISE_FIRST_COLUMNS,
    prompt_hash,
)
from annotator.models import Job, Judge, JudgeCall, JudgeScore
from annotator.reports.exports.csv_safe import undefuse
from annotator.reports.exports.formats import EXPORT_FORMATS, export_chunks
from annotator.services.job_runner import job_run
from tests.annotator.api.conftest import assert_problem
from tests.annotator.judges.test_run_judge_pairwise import first_shown_wins
from tests.factories import PASSWORD, make_batch
from tests.fake_judge import FakeJudge

KEY = "sk-jdata-secret-0123456789abcdef"
HOSTILE = '=HYPERLINK("http://x","click")'


def reply(prompt):
    return json.dumps({"score": 0.75, "reason": HOSTILE})


def _csv(text: str) -> list[dict[str, str]]:
    return [{k: undefuse(v) for k, v in row.items()} for row in csv.DictReader(io.StringIO(text))]


@pytest.fixture
def scored(db, monkeypatch):
    monkeypatch.setenv("JDATA_KEY", KEY)
    batch = make_batch("js", n_items=3)
    with FakeJudge(reply) as fake:
        call_command(
            "run_judge",
            "js",
            "--template",
            "hub_answer_correctness",
            "--base-url",
            fake.url,
            "--model",
            "m",
            "--judge",
            "J",
            "--api-key-env",
            "JDATA_KEY",
            "--samples",
            "2",
            "--temperature",
            "0.7",
            "--backoff",
            "0.01",
        )
    return batch


def _export(batch, *args, tmp_path) -> str:
    out = tmp_path / "out"
    call_command("export_report", batch.name, *args, "--out", str(out))
    return out.read_text(encoding="utf-8")


def test_judge_scores_csv_has_the_issue_columns_and_every_sample(scored, tmp_path):
    text = _export(scored, "--format", "csv", "--table", "judge_scores", tmp_path=tmp_path)
    header = next(csv.reader(io.StringIO(text)))
    assert header[:13] == [
        "item_id",
        "system_id",
        "judge",
        "judge_version",
        "dimension",
        "raw_value",
        "value",
        "reason",
        "model",
        "provider",
        "template_hash",
        "sample",
        "call_status",
    ]
    assert header == JUDGE_SCORES_COLUMNS
    rows = _csv(text)
    assert sorted((r["item_id"], r["sample"]) for r in rows) == [
        ("js-0", "0"),
        ("js-0", "1"),
        ("js-1", "0"),
        ("js-1", "1"),
        ("js-2", "0"),
        ("js-2", "1"),
    ]
    judge = Judge.objects.get()
    first = next(r for r in rows if r["sample"] == "0")
    assert (first["judge"], first["dimension"], first["raw_value"], first["value"], first["model"]) == (
        "J",
        "overall",
        "0.75",
        "4.0",
        "m",
    )
    assert first["call_status"] == "ok" and first["template_hash"] == judge.template_hash
    # the run records its endpoint, and the export names the host it was sent to
    assert first["provider"] == urlsplit(judge.params["base_url"]).netloc != ""
    assert first["judge_version"].startswith(f"{judge.template_version} #")
    assert first["reason"] == HOSTILE  # read back exactly ...
    assert f",'{HOSTILE[:5]}" in text.replace('"', "")  # ... because it was written defused


def test_imported_scores_say_so(scored, tmp_path):
    other = Judge.objects.create(name="imported one")
    JudgeScore.objects.create(
        judge=other,
        item=scored.items.get(item_id="js-1"),
        dimension="coherence",
        raw_value=2,
        scale_min=1,
        scale_max=5,
        value=2,
    )
    rows = _csv(_export(scored, "--table", "judge_scores", tmp_path=tmp_path))
    (row,) = [r for r in rows if r["judge"] == "imported one"]
    assert (row["call_status"], row["sample"], row["judge_version"], row["scale_max"]) == (
        "imported",
        "0",
        "",
        "5.0",
    )


def test_judge_calls_jsonl_never_carries_the_key(scored, tmp_path):
    text = _export(scored, "--table", "judge_calls", tmp_path=tmp_path)
    assert KEY not in text and "JDATA_KEY" not in text
    lines = [json.loads(line) for line in text.splitlines()]
    assert len(lines) == 6 == JudgeCall.objects.count()
    call = JudgeCall.objects.get(item__item_id="js-0", sample=0)
    line = next(x for x in lines if x["item_id"] == "js-0" and x["sample"] == 0)
    assert line["prompt_sha256"] == prompt_hash(call.prompt) and len(line["prompt_sha256"]) == 64
    assert line["raw_output"] == reply("") and line["parse_status"] == "parsed" and line["error"] == ""
    assert (line["attempts"], line["tokens_in"] is not None, isinstance(line["latency_ms"], int)) == (
        1,
        True,
        True,
    )
    assert "prompt" not in line  # the hash, not the rendered text
    with pytest.raises(CommandError, match="--table judge_calls is a JSONL table: use --format jsonl"):
        call_command("export_report", scored.name, "--format", "csv", "--table", "judge_calls")


def test_an_unreadable_call_is_in_the_calls_with_its_error(db, tmp_path):
    batch = make_batch("bad", n_items=1)
    with FakeJudge(lambda p: "I cannot decide.") as fake, pytest.raises(CommandError, match="unreadable"):
        call_command(
            "run_judge",
            "bad",
            "--template",
            "hub_answer_correctness",
            "--base-url",
            fake.url,
            "--model",
            "m",
            "--backoff",
            "0.01",
        )
    (line,) = [json.loads(x) for x in _export(batch, "--format", "jsonl", tmp_path=tmp_path).splitlines()]
    assert line["status"] == "unreadable" and line["parse_status"] == "unreadable"
    assert "no JSON object" in line["error"] and line["raw_output"] == "I cannot decide."
    assert _csv(_export(batch, "--table", "judge_scores", tmp_path=tmp_path)) == []


def test_the_page_links_and_serves_the_judge_tables(scored, client, researcher_user):
    assert client.login(username=researcher_user.username, password=PASSWORD)
    page = client.get(reverse("report_batch", args=[scored.pk])).content.decode()
    for key in ("judge_scores.csv", "pairwise_verdicts.csv", "judge_calls.jsonl", "judges.csv", "scores.csv"):
        assert reverse("report_export", args=[scored.pk, key]) in page
    response = client.get(reverse("report_export", args=[scored.pk, "judge_scores.csv"]))
    assert response.status_code == 200 and 'filename="js-judge_scores.csv"' in response["Content-Disposition"]
    assert "".join(c.decode() for c in response.streaming_content) == "".join(
        export_chunks(EXPORT_FORMATS["judge_scores.csv"], batch=scored)
    )
    plain = make_batch("plain", n_items=1)
    page = client.get(reverse("report_batch", args=[plain.pk])).content.decode()
    assert "judge_scores.csv" not in page and "scores.csv" in page  # judge links only when there are judges


def test_the_background_job_builds_the_calls_file(scored, settings, client, researcher_user):
    settings.ANNOTATOR_BACKGROUND_REPORT_ITEMS = 1
    assert client.login(username=researcher_user.username, password=PASSWORD)
    response = client.get(reverse("report_export", args=[scored.pk, "judge_calls.jsonl"]))
    assert response.status_code == 302
    job = Job.objects.get()
    job_run(job_id=str(job.pk))
    job.refresh_from_db()
    assert job.state == Job.DONE and job.output_name == "js-judge_calls.jsonl"
    assert bytes(job.output).decode() == "".join(
        export_chunks(EXPORT_FORMATS["judge_calls.jsonl"], batch=scored)
    )


@pytest.fixture
def swapped(db):
    make_batch("pw", n_items=6, systems=("base", "new"))
    with FakeJudge(first_shown_wins) as fake:
        call_command(
            "run_judge",
            "pw",
            "--template",
            "geval_pairwise",
            "--base-url",
            fake.url,
            "--model",
            "m",
            "--backoff",
            "0.01",
            "--pairwise",
            "--baseline-system",
            "base",
            "--enhanced-system",
            "new",
            "--swap",
        )
    from annotator.models import Batch

    return Batch.objects.get(name="pw")


def test_pairwise_verdicts_csv_in_the_runs_orientation(swapped, tmp_path):
    text = _export(swapped, "--format", "csv", "--table", "pairwise_verdicts", tmp_path=tmp_path)
    header = next(csv.reader(io.StringIO(text)))
    assert (
        header[:6]
        == PAIRWISE_FIRST_COLUMNS
        == ["prompt_id", "baseline_system", "enhanced_system", "order_sent", "winner", "confidence"]
    )
    assert header[6:11] == [
        "criterion_accuracy",
        "criterion_actionability",
        "criterion_clarity",
        "criterion_completeness",
        "criterion_relevance",
    ]
    rows = _csv(text)
    assert len(rows) == 6
    assert {(r["baseline_system"], r["enhanced_system"]) for r in rows} == {("base", "new")}
    # the judge always named the response shown first: the baseline's as sent, the enhanced's when swapped
    assert {(r["order_sent"], r["winner_shown"], r["winner"]) for r in rows} == {
        ("baseline_first", "first", "baseline"),
        ("enhanced_first", "first", "enhanced"),
    }
    p0 = {r["order_sent"]: r for r in rows if r["prompt_id"] == "p0"}
    assert p0["baseline_first"]["baseline_item_id"] == p0["enhanced_first"]["baseline_item_id"] == "pw-0"
    # first_shown_wins gives the first shown 4 and the second 3: in the run's orientation they swap
    assert (p0["baseline_first"]["baseline_score"], p0["enhanced_first"]["baseline_score"]) == ("4.0", "3.0")
    assert p0["baseline_first"]["criterion_accuracy"] == "4.0" and p0["baseline_first"]["confidence"] == "0.9"


def test_the_api_pages_are_the_csv_rows(scored, api_as):
    client = api_as("researcher")
    rows, path, pages = [], f"/batches/{scored.pk}/judge-scores", 0
    params = {"limit": 2}
    while path:
        body = client.get(path, **params).json()
        rows += body["items"]
        path, params, pages = body["next"], {}, pages + 1
    assert pages == 3  # 3 kept scores, then 3 repeat calls: 2 + 2 + 2
    csv_rows = _csv("".join(export_chunks(EXPORT_FORMATS["judge_scores.csv"], batch=scored)))
    assert [r["item_id"] + r["dimension"] + str(r["sample"]) + str(r["value"]) for r in rows] == [
        r["item_id"] + r["dimension"] + r["sample"] + r["value"] for r in csv_rows
    ]
    assert KEY not in json.dumps(rows)
    assert_problem(client.get(path or f"/batches/{scored.pk}/judge-scores", cursor="WzcsIDFd"), 400)  # [7, 1]
    assert_problem(client.get(f"/batches/{scored.pk}/judge-scores", cursor="not-a-cursor"), 400)
    assert client.get("/batches/999999/judge-scores").status_code == 404


def test_the_api_pages_pairwise_verdicts(swapped, api_as):
    client = api_as("researcher")
    first = client.get(f"/batches/{swapped.pk}/pairwise-verdicts", limit=4).json()
    assert len(first["items"]) == 4 and first["next_cursor"]
    rest = client.get(first["next"]).json()
    assert len(rest["items"]) == 2 and rest["next"] is None
    item = first["items"][0]
    assert set(PAIRWISE_FIRST_COLUMNS) <= set(item) and item["criteria"]["accuracy"] == 4.0
