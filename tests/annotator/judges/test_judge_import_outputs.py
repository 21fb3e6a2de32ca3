"""Judge outputs as the seed's judges write them: verdict keys, flat named keys, labels, fractions, echoes."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from annotator.models import JudgeScore
from hcs.judge_output import (
    JudgeOutputError,
    JudgeScale,
    OutputSpec,
    parse_labels,
    parse_score,
)
from tests.factories import make_batch

RULE8 = {"Excellent": 4, "Very Good": 3, "Good": 2, "Bad": 1}


def jsonl(*rows):
    return "\n".join(json.dumps(r) for r in rows)


def test_the_last_parseable_json_block_wins():
    echoed = (
        'The format asks for:\n```json\n{"score": <frustration_score>}\n```\nand an example:\n'
        '```json\n{"score": 1.0, "reason": "example"}\n```\nMy answer:\n```json\n{"score": 0.2, "reason": "calm"}\n```'
    )
    assert parse_score(echoed) == parse_score('{"score": 0.2, "reason": "calm"}')
    assert parse_score('Example {"score": 1.0}. Answer: {"score": 0.4, "reason": "half"}').value == 0.4


def test_verdict_key_and_flat_named_keys():
    assert (
        parse_score(
            '{"answer_match": 0.7, "reason": "close"}', spec=OutputSpec(verdict_key="answer_match")
        ).value
        == 0.7
    )
    flat = parse_score('{"hub_answer_correctness": 0.8, "reason": "Answers the intent."}')
    assert (flat.value, flat.reason) == (0.8, "Answers the intent.")
    with pytest.raises(JudgeOutputError, match="no score key"):
        parse_score('{"a": 0.8, "b": 0.2}')  # two numbers: which one is the verdict is not guessed


def test_labels_and_fractions_against_the_scale():
    spec = OutputSpec(scale=JudgeScale.parse("1-5"), labels=RULE8)
    assert parse_score("Score: 3/5", spec=spec).value == 3
    with pytest.raises(JudgeOutputError, match="out of 10; this judge's scale is 1–5"):
        parse_score("Score: 3/10", spec=spec)
    with pytest.raises(JudgeOutputError, match="out of 10"):
        parse_score('{"score": "3/10"}', spec=spec)
    assert parse_score('{"score": "Very Good"}', spec=spec).value == 3
    assert parse_score('{"score": "3 (Very Good)"}', spec=spec).value == 3
    assert parse_score("Score: Very Good - minor wording.", spec=spec).value == 3  # not "Good"
    assert parse_labels("Excellent=4, Very Good=3") == {"Excellent": 4.0, "Very Good": 3.0}
    with pytest.raises(ValueError, match="`Great` is not of the form"):
        parse_labels("Great")


@pytest.mark.django_db
def test_import_with_verdict_key_labels_and_quoted_refusals(tmp_path):
    make_batch("o", n_items=3)
    path = tmp_path / "scores.jsonl"
    path.write_text(
        jsonl(
            {
                "item_id": "o-0",
                "dimension": "overall",
                "raw_output": '{"answer_match": 0.5, "answer_match_reason": "x", "confidence": 0.9}',
            },
            {"item_id": "o-1", "dimension": "overall", "raw_output": "Score: 3/10 because it is vague"},
            {"item_id": "o-2", "dimension": "overall", "score": "Very Good"},
        )
    )
    args = [
        "import_judge_scores",
        str(path),
        "--batch",
        "o",
        "--judge",
        "j",
        "--scale",
        "1-4",
        "--verdict-key",
        "answer_match",
        "--labels",
        "Excellent=4, Very Good=3, Good=2, Bad=1",
    ]
    with pytest.raises(CommandError) as refused:
        call_command(*args)
    message = str(refused.value)
    assert "line 2" in message and "out of 10; this judge's scale is 1–4" in message
    assert "\u201cScore: 3/10 because it is vague\u201d" in message  # the refusal keeps the raw text
    assert "score 0.5 is outside the declared scale 1–4" in message
    assert JudgeScore.objects.count() == 0
    path.write_text(
        jsonl(
            {
                "item_id": "o-0",
                "dimension": "overall",
                "raw_output": '{"answer_match": 2, "confidence": 0.9}',
            },
            {"item_id": "o-2", "dimension": "overall", "score": "Very Good"},
        )
    )
    call_command(*args)
    assert dict(JudgeScore.objects.values_list("item__item_id", "raw_value")) == {"o-0": 2.0, "o-2": 3.0}


@pytest.mark.django_db
def test_the_judges_page_takes_a_verdict_key_and_labels(client):
    from tests.factories import PASSWORD, make_user

    make_batch("pg", n_items=1)
    make_user("res", role="researcher")
    client.login(username="res", password=PASSWORD)
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile(
        "s.jsonl",
        jsonl(
            {
                "item_id": "pg-0",
                "dimension": "overall",
                "raw_output": '{"verdict_label": "Good", "hub_x": "Good"}',
            }
        ).encode(),
    )
    response = client.post(
        "/judges/import/scores/",
        {
            "batch": "pg",
            "judge": "w",
            "scale": "1-4",
            "verdict_key": "hub_x",
            "labels": "Excellent=4, Very Good=3, Good=2, Bad=1",
            "file": upload,
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert JudgeScore.objects.get().raw_value == 2.0


@pytest.mark.django_db
def test_a_judges_own_criteria_are_kept_and_mapped_onto_rubric_dimensions(tmp_path):
    from annotator.models import JudgeCriterionScore

    make_batch("c", n_items=2)
    geval = json.dumps(
        {"accuracy": {"score": 4, "reasoning": "right"}, "clarity": {"score": 2, "reasoning": "muddled"}}
    )
    path = tmp_path / "geval.jsonl"
    path.write_text(
        jsonl(
            *(
                {"item_id": i, "dimension": d, "raw_output": geval}
                for i in ("c-0", "c-1")
                for d in ("accuracy", "clarity")
            )
        )
    )
    args = ["import_judge_scores", str(path), "--batch", "c", "--judge", "g", "--scale", "1-5"]
    with pytest.raises(CommandError, match="`accuracy` is not one of"):
        call_command(*args)  # without --own-criteria a criterion that is not a rubric dimension is refused
    call_command(*args, "--own-criteria", "--criteria-map", "clarity=fluency")
    criteria = {
        (c.item.item_id, c.criterion): (c.raw_value, c.rubric_dimension, c.reason)
        for c in JudgeCriterionScore.objects.select_related("item")
    }
    assert criteria[("c-0", "accuracy")] == (4.0, "", "right")
    assert criteria[("c-1", "clarity")] == (2.0, "fluency", "muddled")
    # the mapped criterion is also a score on the rubric dimension, so calibration sees it
    assert dict(JudgeScore.objects.values_list("item__item_id", "dimension").distinct()) == {
        "c-0": "fluency",
        "c-1": "fluency",
    }
    assert set(JudgeScore.objects.values_list("raw_value", flat=True)) == {2.0}


@pytest.mark.django_db
def test_one_answer_on_the_rows_of_several_dimensions_scores_only_those_it_names(tmp_path):
    make_batch("sh", n_items=2)
    named = json.dumps({"coherence": {"score": 4, "reasoning": "flows"}, "fluency": 2})
    path = tmp_path / "shared.jsonl"
    rows = [
        {"item_id": "sh-0", "dimension": "coherence", "raw_output": named},
        {"item_id": "sh-0", "dimension": "fluency", "raw_output": named},
        {"item_id": "sh-1", "dimension": "coherence", "raw_output": '{"score": 4}'},
        {"item_id": "sh-1", "dimension": "fluency", "raw_output": '{"score": 4}'},
    ]
    path.write_text(jsonl(*rows))
    args = ["import_judge_scores", str(path), "--batch", "sh", "--judge", "f", "--scale", "1-5"]
    with pytest.raises(CommandError) as refused:
        call_command(*args)
    message = str(refused.value)
    assert "line 3" in message and "line 4" in message and "line 1" not in message
    assert "names none of the 2 dimensions it was asked to score, so none is scored" in message
    assert "this item's rows of coherence, fluency give the same raw_output" in message
    assert JudgeScore.objects.count() == 0
    path.write_text(
        jsonl(*rows[:2], {"item_id": "sh-1", "dimension": "coherence", "raw_output": '{"score": 4}'})
    )
    call_command(*args)  # a raw output on one row only is that row's own verdict
    scores = {(s.item.item_id, s.dimension): (s.raw_value, s.reason) for s in JudgeScore.objects.all()}
    assert scores == {
        ("sh-0", "coherence"): (4.0, "flows"),
        ("sh-0", "fluency"): (2.0, ""),
        ("sh-1", "coherence"): (4.0, ""),
    }
