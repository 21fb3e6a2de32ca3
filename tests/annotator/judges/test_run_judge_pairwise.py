"""Pairwise runs of the G-Eval template: pairs by prompt_id, verdict and the judge's own criteria stored."""

from __future__ import annotations

import json
import re

import pytest
from django.core.management import CommandError, call_command

from annotator.judges.engine.templates import load_template
from annotator.models import JudgeCall, JudgeCriterionScore, PairwiseVerdict
from tests.factories import make_batch
from tests.fake_judge import FakeJudge
from tests.judge_runs import run_judge

CRITERIA = ("accuracy", "completeness", "clarity", "actionability", "relevance")


def geval_reply(prompt):
    answer = {c: {"score": 4, "reasoning": f"{c} ok", "evidence": ["quote"]} for c in CRITERIA}
    answer["overall"] = {"baseline_score": 3, "enhanced_score": 4, "winner": "enhanced", "confidence": 0.8}
    # the judge echoes the template's example before its answer: the last block is the answer
    return (
        'Format:\n```json\n{"accuracy": {"score": N}}\n```\nAnswer:\n```json\n' + json.dumps(answer) + "\n```"
    )


def run(fake, *extra):
    run_judge(fake, "pw", *extra, template="geval_pairwise", model="m")


@pytest.mark.django_db
def test_a_pairwise_run_stores_verdicts_and_criteria(capsys):
    make_batch("pw", n_items=7, systems=("base", "new"))  # prompts p0..p2 paired, p3 has only `base`
    with FakeJudge(geval_reply) as fake:
        run(fake, "--pairwise", "--baseline-system", "base", "--enhanced-system", "new")
        assert fake.calls == 3
        prompts = [r["body"]["messages"][-1]["content"] for r in fake.requests]
        prompt = next(p for p in prompts if "(answer 0)" in p)
        run(fake, "--pairwise", "--baseline-system", "base", "--enhanced-system", "new")
        assert fake.calls == 3  # nothing missing: nothing called
    out, err = capsys.readouterr()
    assert "Scale conflict in geval_pairwise: the text says 1 = Excellent" in err  # flagged before the run
    assert "1 prompt without a pair was left out, e.g. prompt `p3`" in out
    assert (
        "**Task:** Plan a route to the airport number 0" in prompt
        and "(answer 0)" in prompt
        and "(answer 1)" in prompt
    )
    verdicts = PairwiseVerdict.objects.order_by("baseline__position")
    assert [(v.baseline.item_id, v.enhanced.item_id, v.winner, v.confidence) for v in verdicts] == [
        ("pw-0", "pw-1", "enhanced", 0.8),
        ("pw-2", "pw-3", "enhanced", 0.8),
        ("pw-4", "pw-5", "enhanced", 0.8),
    ]
    assert (verdicts[0].baseline_score, verdicts[0].enhanced_score) == (3, 4)
    scores = JudgeCriterionScore.objects.filter(item__item_id="pw-0")
    assert {s.criterion: s.rubric_dimension for s in scores} == {
        "accuracy": "",
        "completeness": "",
        "clarity": "fluency",
        "actionability": "",
        "relevance": "relevance",
    }
    assert all(s.raw_value == 4 and s.evidence == ["quote"] for s in scores)
    assert JudgeCall.objects.filter(status="ok", enhanced__isnull=False).count() == 3
    judge = verdicts[0].judge
    assert judge.params["scale_warnings"] == load_template("geval_pairwise").scale_warnings


@pytest.mark.django_db
def test_pairwise_needs_a_pairwise_template_and_two_systems():
    make_batch("pw", n_items=2, systems=("base", "new"))
    with FakeJudge(geval_reply) as fake:
        with pytest.raises(CommandError, match="is a pairwise template: run it with --pairwise"):
            run(fake)
        with pytest.raises(CommandError, match="two different systems"):
            run(fake, "--pairwise", "--baseline-system", "base")
        with pytest.raises(CommandError, match="no prompt has one item of `base` and one of `gone`"):
            run(fake, "--pairwise", "--baseline-system", "base", "--enhanced-system", "gone")
    assert fake.calls == 0


@pytest.mark.django_db
def test_an_answer_with_a_criterion_out_of_range_is_unreadable_and_its_verdict_is_not_counted():
    make_batch("pw", n_items=2, systems=("base", "new"))
    reply = json.dumps({"accuracy": {"score": 9}, "overall": {"winner": "tie", "confidence": 0.5}})
    with (
        FakeJudge(lambda p: reply) as fake,
        pytest.raises(CommandError, match="failed or came back unreadable") as exc,
    ):
        run(fake, "--pairwise", "--baseline-system", "base", "--enhanced-system", "new")
    assert exc.value.returncode == 1
    call = JudgeCall.objects.get()
    assert call.status == "unreadable" and "score 9 is outside the declared scale 1–5" in call.error
    assert (
        call.raw_output == reply and call.parsed["verdict"]["winner"] == "tie"
    )  # kept on the call, for the record
    assert not PairwiseVerdict.objects.exists()


def first_shown_wins(prompt):
    """A judge that always prefers the answer shown first, whatever it says."""
    answer = {c: {"score": 4, "reasoning": "ok"} for c in CRITERIA}
    answer["overall"] = {"baseline_score": 4, "enhanced_score": 3, "winner": "baseline", "confidence": 0.9}
    return json.dumps(answer)


@pytest.mark.django_db
def test_swap_runs_each_pair_in_both_orders_and_reports_position_bias(client, researcher_user):
    from django.urls import reverse

    from tests.factories import PASSWORD

    batch = make_batch("pw", n_items=6, systems=("base", "new"))  # three pairs
    with FakeJudge(first_shown_wins) as fake:
        run(fake, "--pairwise", "--baseline-system", "base", "--enhanced-system", "new", "--swap")
        assert fake.calls == 6
        prompts = [r["body"]["messages"][-1]["content"] for r in fake.requests]
        run(fake, "--pairwise", "--baseline-system", "base", "--enhanced-system", "new", "--swap")
        assert fake.calls == 6  # both orders saved: a rerun calls nothing
    orders = set(PairwiseVerdict.objects.values_list("baseline__item_id", "enhanced__item_id"))
    assert orders == {
        ("pw-0", "pw-1"),
        ("pw-1", "pw-0"),
        ("pw-2", "pw-3"),
        ("pw-3", "pw-2"),
        ("pw-4", "pw-5"),
        ("pw-5", "pw-4"),
    }
    # the swapped call shows the enhanced system's answer where the baseline's was
    shown = [[int(n) for n in re.findall(r"\(answer (\d+)\)", p)] for p in prompts]
    assert sorted(tuple(s) for s in shown) == [(0, 1), (1, 0), (2, 3), (3, 2), (4, 5), (5, 4)]
    assert client.login(username=researcher_user.username, password=PASSWORD)
    data = json.loads(client.get(reverse("report_export", args=[batch.pk, "json"])).content)
    (name,) = data["judges"]
    position = data["judges"][name]["overall"]["position"]
    assert position["n_pairs"] == 3 and position["consistency"] == 0 and position["first_preference"] == 1
    assert position["consistency_ci95"][0] == 0 and 0 < position["consistency_ci95"][1] < 1
    assert position["consistent_verdicts"] == {"baseline": 0, "enhanced": 0, "tie": 0, "inconsistent": 3}
    page = client.get(reverse("report_judges", args=[batch.pk])).content.decode()
    assert "prefers whichever answer is shown first" in page


@pytest.mark.django_db
def test_swap_needs_pairwise():
    make_batch("pw", n_items=2, systems=("base", "new"))
    with (
        FakeJudge(geval_reply) as fake,
        pytest.raises(CommandError, match="--swap runs each pair in both orders"),
    ):
        call_command(
            "run_judge", "pw", "--template", "hcs_rubric", "--base-url", fake.url, "--model", "m", "--swap"
        )
    assert fake.calls == 0
