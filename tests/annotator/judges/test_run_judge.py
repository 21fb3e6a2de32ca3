"""run_judge against a local OpenAI-compatible endpoint (tests/fake_judge.py): every call kept, none repeated."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from annotator.judges.engine.templates import TEMPLATE_DIR
from annotator.models import Judge, JudgeCall, JudgeFailure, JudgeScore
from tests.factories import make_batch
from tests.fake_judge import FakeJudge
from tests.judge_runs import run_judge

RULE = "hub_answer_correctness"


def _reply(prompt):
    if "answer 2)" in prompt:
        return "I cannot decide on a number here, sorry."
    if "answer 1)" in prompt:
        return 'Verdict:\n```json\n{"score": 0.25, "reason": "Misses the rain."}\n```'
    return '{"hub_answer_correctness": 1.0, "reason": "Fully answers the request."}'


def _always_500_for(marker):
    return lambda number, prompt: 500 if marker in prompt else None


def run(fake, batch, *extra, template=RULE):
    """The command's exit status: 0, or 1 when a call failed or was unreadable (any other error raises)."""
    try:
        run_judge(fake, batch, "--max-retries", "2", *extra, template=template)
    except CommandError as exc:
        if "failed or came back unreadable" not in str(exc):
            raise
        assert exc.returncode == 1
        return 1
    return 0


@pytest.mark.django_db
def test_every_call_is_saved_with_what_was_sent_and_what_came_back(monkeypatch, capsys):
    make_batch("run", n_items=4)
    monkeypatch.setenv("FAKE_JUDGE_KEY", "sk-test-1234567")
    with FakeJudge(_reply, fault=_always_500_for("answer 3)")) as fake:
        status = run(
            fake,
            "run",
            "--api-key-env",
            "FAKE_JUDGE_KEY",
            "--concurrency",
            "3",
            "--price-in",
            "2",
            "--price-out",
            "8",
        )
    assert status == 1  # calls failed: the exit status says so
    out, err = capsys.readouterr()
    assert "4/4" in err and "failed 2" in err and "cost ~" in err  # the tqdm bar
    assert "done: 4/4 calls, 2 failed, 2 retries" in out and "estimated cost" in out
    assert "FAILED run-2: [overall] no JSON object and no 'score: N' line" in out
    assert "FAILED run-3: call failed: HTTP 500 after 3 attempts" in out
    calls = {c.item.item_id: c for c in JudgeCall.objects.select_related("item", "judge")}
    assert {k: c.status for k, c in calls.items()} == {
        "run-0": "ok",
        "run-1": "ok",
        "run-2": "unreadable",
        "run-3": "failed",
    }
    ok = calls["run-1"]
    assert (
        ok.prompt[-1]["content"].startswith("You are an impartial AI judge")
        and "(answer 1)" in ok.prompt[-1]["content"]
    )
    assert ok.parsed["scores"]["overall"] == {"raw": 0.25, "value": 2.0, "reason": "Misses the rain."}
    assert ok.tokens_in > 100 and ok.tokens_out > 0 and ok.attempts == 1 and ok.latency_ms >= 0
    assert (ok.model, ok.params, ok.template_name, ok.template_version) == (
        "fake-1",
        {"temperature": 0.0},
        RULE,
        "1",
    )
    assert len(ok.template_hash) == 64 and ok.judge.template_hash == ok.template_hash
    assert (
        calls["run-3"].attempts == 3
        and calls["run-3"].http_status == 500
        and "fault 500" in calls["run-3"].raw_output
    )
    assert calls["run-2"].raw_output == "I cannot decide on a number here, sorry."
    scores = {s.item.item_id: s.value for s in JudgeScore.objects.select_related("item")}
    assert scores == {
        "run-0": 5.0,
        "run-1": 2.0,
    }  # the flat named key {"hub_answer_correctness": 1.0} is read
    assert JudgeFailure.objects.count() == 2
    stored = json.dumps(list(JudgeCall.objects.values()), default=str) + json.dumps(
        list(Judge.objects.values("params"))
    )
    assert "sk-test-1234567" not in stored and "sk-secret-in-body-123" not in stored
    assert all(r["auth"] == "Bearer sk-test-1234567" for r in fake.requests)
    assert all(r["path"] == "/v1/chat/completions" and r["body"]["model"] == "fake-1" for r in fake.requests)


@pytest.mark.django_db
def test_a_rerun_calls_only_what_is_missing_then_failed_then_all(capsys):
    make_batch("re", n_items=5)
    with FakeJudge(_reply, fault=_always_500_for("answer 3)")) as fake:
        run(fake, "re", "--limit", "3")
        assert len(fake.answered) == 3
        fake.calls = 0
        run(fake, "re")  # items 3 and 4 only
        assert fake.calls == 1 + 3 and JudgeCall.objects.count() == 5
        fake.fault, fake.calls = None, 0
        run(fake, "re")
        assert fake.calls == 0
        run(fake, "re", "--retry-failed")  # run-2 (unreadable) and run-3 (failed)
        assert fake.calls == 2
        run(fake, "re", "--force")  # every call redone, the four scored ones from the response cache
        assert fake.calls == 3
        run(fake, "re", "--force", "--no-cache")
        assert fake.calls == 8
    assert JudgeCall.objects.count() == 5 and JudgeCall.objects.filter(status="ok").count() == 4
    assert JudgeScore.objects.filter(item__item_id="run-3").count() == 0
    assert JudgeScore.objects.filter(item__item_id="re-3").count() == 1
    assert not JudgeFailure.objects.filter(
        item__item_id="re-3"
    ).exists()  # the stale failure went when scored
    assert "3 items already called were skipped" in capsys.readouterr().out


@pytest.mark.django_db
def test_changed_template_text_without_a_new_version_is_a_new_judge(tmp_path, capsys):
    make_batch("ver", n_items=2)
    data = json.loads((TEMPLATE_DIR / f"{RULE}.json").read_text(encoding="utf-8"))
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps(data))
    second.write_text(json.dumps(data | {"prompt": data["prompt"] + "\nBe strict."}))
    with FakeJudge() as fake:
        run(fake, "ver", "--judge", "mine", template=str(first))
        run(fake, "ver", "--judge", "mine", template=str(second))
        assert fake.calls == 4  # the new text is called for every item, not skipped as done
    judges = list(Judge.objects.order_by("pk"))
    assert judges[0].name == "mine" and judges[1].name.startswith("mine (template 1 #")
    assert judges[0].template_hash != judges[1].template_hash
    assert [j.scores.count() for j in judges] == [2, 2]
    assert "never mixed" in capsys.readouterr().out


@pytest.mark.django_db
def test_a_refused_key_ends_the_run_with_one_message():
    make_batch("auth", n_items=30)
    refused = r"^the run stopped: the endpoint refused the API key \(HTTP 401\)"
    with FakeJudge(fault=lambda n, p: 401) as fake, pytest.raises(CommandError, match=refused):
        run(fake, "auth", "--concurrency", "4")
    assert fake.calls <= 4 and JudgeCall.objects.count() == 0


@pytest.mark.django_db
def test_show_prompt_prints_without_calling(capsys):
    make_batch("show", n_items=3)
    call_command("run_judge", "show", "--template", RULE, "--show-prompt", "2")
    out = capsys.readouterr().out
    assert out.count("===== item show-") == 2 and "USER INPUT:\nPlan a route" in out and "{{" not in out


@pytest.mark.django_db
def test_a_required_variable_missing_is_named_with_the_item(tmp_path):
    batch = make_batch("req", n_items=2)
    batch.items.filter(item_id="req-1").update(metadata={"more-context": "tool output"})
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"name": "t", "scale": "0-1", "prompt": "{{input}} {{more-context}}"}))
    refused = (
        r"1 item cannot fill the template; nothing was called:\n  item `req-0`: `more-context` is not a field"
    )
    with FakeJudge() as fake, pytest.raises(CommandError, match=refused):
        run(fake, "req", template=str(path))
    assert fake.calls == 0


@pytest.mark.django_db
def test_labelled_verdicts_are_read_through_the_templates_label_map():
    make_batch("lab", n_items=1)
    with FakeJudge(lambda p: '{"score": "Very Good", "reason": "Minor wording issue."}') as fake:
        run(fake, "lab", template="studio_live_coach_feedback_quality")
    score = JudgeScore.objects.get()
    assert (score.raw_value, score.scale_max, score.reason) == (3.0, 4.0, "Minor wording issue.")


@pytest.mark.django_db
def test_run_judge_rubric_template_scores_every_dimension():
    batch = make_batch("rub", n_items=2)
    dims = batch.rubric_obj.dimension_keys

    def reply(prompt):
        assert "coherence (Coherence)" in prompt  # the rubric is rendered into the prompt
        return json.dumps({d: {"score": 4, "reasoning": "ok"} for d in dims})

    with FakeJudge(reply) as fake:
        run(fake, "rub", template="hcs_rubric")
    assert JudgeScore.objects.count() == 2 * len(dims)
    assert set(JudgeScore.objects.values_list("value", flat=True)) == {4.0}


@pytest.mark.django_db
def test_run_judge_errors():
    make_batch("e", n_items=1)
    with pytest.raises(CommandError, match="no template 'nope'; shipped: geval_pairwise"):
        call_command(
            "run_judge", "e", "--template", "nope", "--base-url", "http://127.0.0.1:9", "--model", "m"
        )
    with pytest.raises(CommandError, match="no batch named"):
        call_command(
            "run_judge", "zzz", "--template", "hcs_rubric", "--base-url", "http://127.0.0.1:9", "--model", "m"
        )
    with pytest.raises(CommandError, match="--base-url and --model are required"):
        call_command("run_judge", "e", "--template", "hcs_rubric")
