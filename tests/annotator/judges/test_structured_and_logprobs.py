"""Structured outputs from the template's schema, with a fall-back to free text, and the score token's
distribution kept with G-Eval's weighted score and a confidence per item."""

from __future__ import annotations

import json

import pytest

from annotator.judges.engine.structured import response_format
from annotator.judges.engine.templates import load_template
from annotator.judges.selectors.judges import judges_report
from annotator.models import JudgeCall, JudgeScore
from annotator.reports.selectors.batch_report import report_arrays
from hcs.judge_output import parse_score
from hcs.rubric import Rubric
from tests.factories import make_annotation, make_batch, make_user
from tests.fake_judge import FakeJudge
from tests.judge_runs import run_judge

COACH = "studio_live_coach_feedback_quality"  # 1–4, with verdict labels


def test_the_schema_follows_the_template_scale_keys_and_labels():
    rubric = Rubric.default()
    coach = response_format(load_template(COACH), rubric)["json_schema"]
    assert coach["strict"] is True
    props = coach["schema"]["properties"]
    assert list(props) == ["reason", "score", "label"]  # reason before the score it justifies
    assert props["score"] == {"type": "integer", "minimum": 1, "maximum": 4}
    assert props["label"]["enum"] == ["Excellent", "Very Good", "Good", "Bad"]

    reference = response_format(load_template("reference_answer"), rubric)["json_schema"]["schema"]
    assert reference["properties"]["answer_match"] == {"type": "number", "minimum": 0.0, "maximum": 1.0}
    assert reference["required"] == ["reason", "answer_match"] and reference["additionalProperties"] is False

    per_dimension = response_format(load_template("hcs_rubric"), rubric)["json_schema"]["schema"]
    assert set(per_dimension["properties"]) == set(rubric.dimension_keys)
    assert response_format(load_template("geval_pairwise"), rubric) is None


@pytest.mark.parametrize("template", ["hcs_rubric", "reference_answer", COACH])
def test_an_answer_in_the_schema_is_read_by_the_parser(template):
    rubric = Rubric.default()
    t = load_template(template)
    schema = response_format(t, rubric)["json_schema"]["schema"]

    def fill(s):
        props = s["properties"]
        if "type" in next(iter(props.values())) and next(iter(props.values()))["type"] == "object":
            return {k: fill(v) for k, v in props.items()}
        out = {}
        for key, p in props.items():
            out[key] = (
                "Because."
                if p["type"] == "string" and "enum" not in p
                else (p.get("enum", [None])[0] or p["maximum"])  # rule 8's first label is its maximum
            )
        return out

    answer = json.dumps(fill(schema))
    for dimension in t.dimension_keys(rubric):
        score = parse_score(
            answer, dimension=None if dimension == "overall" else dimension, spec=t.output_spec
        )
        assert score.value == t.scale.max and score.reason == "Because."


@pytest.mark.django_db
def test_a_run_sends_the_schema_keeps_the_distribution_and_records_the_mode():
    make_batch("lp", n_items=3)

    def reply(prompt):
        return json.dumps({"reason": "Names 2 metrics.", "score": 3, "label": "Very Good"})

    def probs(prompt):
        return {"3": 0.6, "4": 0.3, "2": 0.1}

    with FakeJudge(reply, score_probs=probs) as fake:
        run_judge(fake, "lp", template=COACH, model="m")
    body = fake.requests[0]["body"]
    assert body["response_format"]["type"] == "json_schema" and body["logprobs"] is True
    call = JudgeCall.objects.first()
    assert call.output_mode == "json_schema" and call.params == {"temperature": 0.0}
    dist = call.parsed["scores"]["overall"]["distribution"]
    assert dist["probabilities"] == pytest.approx({"2": 0.1, "3": 0.6, "4": 0.3})
    assert dist["weighted"] == pytest.approx(3.2) and dist["confidence"] == pytest.approx(0.6)
    score = JudgeScore.objects.first()
    # 1–4 onto 1–5: 1 + (3.2 − 1) · 4/3
    assert score.value == pytest.approx(1 + 2 * 4 / 3)
    assert score.weighted_value == pytest.approx(1 + 2.2 * 4 / 3) and score.confidence == pytest.approx(0.6)


@pytest.mark.django_db
def test_an_endpoint_refusing_the_schema_gets_free_text_and_the_run_says_so(capsys):
    make_batch("ft", n_items=2)
    with FakeJudge(
        lambda p: "The feedback names both metrics.\nScore: 3", refuse={"response_format", "logprobs"}
    ) as fake:
        run_judge(fake, "ft", "--concurrency", "1", template=COACH, model="m")
    out = capsys.readouterr().out
    assert "refused response_format" in out and "free text" in out and "refused logprobs" in out
    assert set(JudgeCall.objects.values_list("output_mode", flat=True)) == {"text"}
    assert set(JudgeCall.objects.values_list("status", flat=True)) == {"ok"}
    assert not any("response_format" in r["body"] for r in fake.requests[2:])  # asked once, then never again
    assert JudgeScore.objects.filter(confidence__isnull=False).count() == 0


@pytest.mark.django_db
def test_a_zero_to_one_judge_asks_no_logprobs_and_no_run_option_can_force_a_schema(capsys):
    make_batch("zo", n_items=1)
    with FakeJudge() as fake:
        run_judge(fake, "zo", model="m")
        run_judge(fake, "zo", "--force", "--no-structured", model="m")
    first, second = (r["body"] for r in fake.requests)
    assert "logprobs" not in first and first["response_format"]["type"] == "json_schema"
    assert "response_format" not in second
    assert JudgeCall.objects.get().output_mode == "text"


@pytest.mark.django_db
def test_a_pointwise_judge_with_logprobs_has_an_ece_in_the_report():
    batch = make_batch("ece", n_items=4)
    people = [make_user(f"p{i}") for i in range(2)]
    for n, item in enumerate(batch.items.order_by("position")):
        for person in people:
            make_annotation(item, person, {d: 3 if n % 2 else 4 for d in batch.rubric_obj.dimension_keys})

    def reply(prompt):
        return json.dumps({"reason": "ok", "score": 4, "label": "Excellent"})

    with FakeJudge(reply, score_probs=lambda p: {"4": 0.8, "3": 0.2}) as fake:
        run_judge(fake, "ece", template=COACH, model="m")
    section = judges_report(batch=batch, arrays=report_arrays(batch=batch), n_boot=20)
    row = section.to_json()[f"{COACH}/m"]["overall"]
    calibration = row["confidence_calibration"]
    # the judge says 4 on 1–4 (5 on the rubric) with p = 0.8; the people's HCS is 4 or 3: never within half a
    # judge point (2/3) of 5, so accuracy 0 and ECE 0.8
    assert calibration["n"] == 4 and calibration["ece"] == pytest.approx(0.8)
