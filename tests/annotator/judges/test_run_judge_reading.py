"""A judge run stores what the answers say, through the fake provider: one bare number to a template of five
dimensions scores none of them, and an answer with two different verdicts is ``ambiguous``; each with its
reason in ``judge_calls.jsonl`` and on the run's page."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from annotator.judges.engine.progress import call_reasons
from annotator.models import Job, JudgeCall, JudgeFailure, JudgeScore
from hcs.rubric import Rubric
from tests.annotator.judges.test_run_failure_reasons import form
from tests.annotator.judges.test_run_judge import run
from tests.annotator.judges.test_web_runs import start
from tests.factories import make_batch
from tests.fake_judge import FakeJudge

DIMENSIONS = ", ".join(Rubric.default().dimension_keys)
NAMES_NONE = (
    "the judge output names none of the 5 dimensions it was asked to score, so none is scored: one number is "
    f"not a score for each (asked for {DIMENSIONS}; its keys: score)"
)
COACH = "studio_live_coach_feedback_quality"
# Rule 8's scale as the prompt lists it, echoed back before the verdict; then two verdicts that disagree.
ECHO = (
    "- **4 (Excellent)** \u2192 Fully compliant.\n- **3 (Very Good)** \u2192 Minor issues.\n"
    "- **2 (Good)** \u2192 Generic.\n- **1 (Bad)** \u2192 Misaligned.\n\n"
    "My verdict: **2 (Good)** \u2192 Names timing, but the fix is generic."
)
TWO = "**3 (Very Good)** \u2192 Correct focus.\n\nMy verdict: **2 (Good)** \u2192 The fix is generic."


def calls_jsonl(batch, tmp_path) -> list[dict]:
    out = tmp_path / "calls.jsonl"
    call_command(
        "export_report", batch.name, "--format", "jsonl", "--table", "judge_calls", "--out", str(out)
    )
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


@pytest.mark.django_db
def test_one_number_to_the_rubric_template_is_unreadable_and_scores_nothing(tmp_path, capsys):
    batch = make_batch("one", n_items=3)
    assert len(batch.rubric_obj.dimension_keys) == 5
    with FakeJudge(lambda prompt: '{"score": 4}') as fake:
        assert run(fake, "one", template="hcs_rubric") == 1  # the exit status says calls were not read
    out = capsys.readouterr().out
    assert "done: 3/3 calls, 3 failed" in out and f"FAILED one-0: {NAMES_NONE}" in out
    assert JudgeScore.objects.count() == 0
    assert set(JudgeCall.objects.values_list("status", "error")) == {("unreadable", NAMES_NONE)}
    assert set(JudgeFailure.objects.values_list("dimension", "error")) == {("", NAMES_NONE)}
    lines = calls_jsonl(batch, tmp_path)
    assert len(lines) == 3
    for line in lines:
        assert (line["status"], line["parse_status"], line["error"]) == (
            "unreadable",
            "unreadable",
            NAMES_NONE,
        )
        assert line["raw_output"] == '{"score": 4}' and line["parsed"] == {}


@pytest.mark.django_db
def test_the_reason_shows_on_the_run_page(researcher, django_capture_on_commit_callbacks):
    batch = make_batch("web", n_items=2)
    with FakeJudge(lambda prompt: '{"score": 4}') as fake:
        start(researcher, django_capture_on_commit_callbacks, form(fake.url))
    job = Job.objects.get()
    assert job.state == Job.FAILED and job.message.startswith(
        "No call gave a score (2 of 2 failed, unreadable or ambiguous)"
    )
    ((reason, count),) = [(r["reason"], r["count"]) for r in job.progress["failure_reasons"]]
    assert count == 2 and reason == call_reasons([("", NAMES_NONE)])[0]  # cut where long, as every reason
    assert reason.startswith("the judge output names none of the 5 dimensions it was asked to score, so none")
    page = researcher.get(f"/jobs/{job.pk}/").content.decode()
    assert f"<li>{reason} (2)</li>" in page
    assert f"/reports/{batch.pk}/export/judge_calls.jsonl" in page
    assert JudgeScore.objects.count() == 0


@pytest.mark.django_db
def test_a_reply_naming_two_dimensions_scores_those_two_only():
    make_batch("two", n_items=1)
    with FakeJudge(lambda p: json.dumps({"coherence": {"score": 4}, "fluency": 2, "score": 5})) as fake:
        assert run(fake, "two", template="hcs_rubric") == 1
    assert dict(JudgeScore.objects.values_list("dimension", "raw_value")) == {
        "coherence": 4.0,
        "fluency": 2.0,
    }
    call = JudgeCall.objects.get()
    assert call.status == "unreadable" and "[relevance] the judge output gives no score for 'relevance'" in (
        call.error
    )


@pytest.mark.django_db
def test_rule_8_read_past_its_echoed_scale_and_two_verdicts_are_ambiguous(tmp_path):
    batch = make_batch("r8", n_items=2)
    with FakeJudge(lambda prompt: ECHO if "(answer 0)" in prompt else TWO) as fake:
        assert run(fake, "r8", "--no-structured", template=COACH) == 1
        calls = {c.item.item_id: c for c in JudgeCall.objects.select_related("item")}
        assert calls["r8-0"].status == "ok" and calls["r8-1"].status == "ambiguous"
        score = JudgeScore.objects.get()
        assert (score.item.item_id, score.raw_value, score.reason) == (
            "r8-0",
            2.0,
            "Names timing, but the fix is generic.",
        )
        line = next(x for x in calls_jsonl(batch, tmp_path) if x["item_id"] == "r8-1")
        assert (line["status"], line["parse_status"], line["parsed"]) == ("ambiguous", "ambiguous", {})
        assert line["error"] == (
            "[overall] ambiguous: the judge output gives 2 different verdicts outside a list of the scale "
            "(\u201c3 (Very Good)\u201d, \u201c2 (Good)\u201d); none is taken"
        )
        # --retry-failed calls the ambiguous one again, and nothing else
        fake.reply, fake.calls = (lambda prompt: "**3 (Very Good)** \u2192 Correct focus."), 0
        assert run(fake, "r8", "--no-structured", template=COACH) == 0 and fake.calls == 0
        assert run(fake, "r8", "--no-structured", "--retry-failed", template=COACH) == 0
        assert fake.calls == 1
    assert dict(JudgeScore.objects.values_list("item__item_id", "raw_value")) == {"r8-0": 2.0, "r8-1": 3.0}
