"""The HCS rubric as data: loading, caps, validation messages and the overall score."""

import json
from pathlib import Path

import pytest

from hcs.rubric import DEFAULT_RUBRIC_PATH, Rubric, RubricError
from hcs.rubric_markdown import render_markdown

ROOT = Path(__file__).resolve().parents[2]
ALL_FIVES = {
    k: 5 for k in ("coherence", "relevance", "instruction_following", "safety_compliance", "fluency")
}


@pytest.fixture(scope="module")
def rubric() -> Rubric:
    return Rubric.default()


def test_dimensions_and_weights_are_the_guidelines(rubric):
    assert rubric.dimension_keys == (
        "coherence",
        "relevance",
        "instruction_following",
        "safety_compliance",
        "fluency",
    )
    assert rubric.weights == {
        "coherence": 0.40,
        "relevance": 0.20,
        "instruction_following": 0.20,
        "safety_compliance": 0.10,
        "fluency": 0.10,
    }
    assert all(len(d.levels) == 5 and all(d.levels) for d in rubric.dimensions)


def test_airport_toll_good_example_scores_five(rubric):
    # Guideline example: non-toll route, rain cautions → C=R=I=S=F=5 → overall 5.0.
    assert rubric.validate(ALL_FIVES, []) == []
    assert rubric.overall(ALL_FIVES) == 5.0


def test_airport_toll_poor_example(rubric):
    # Guideline example: "Take the expressway" ignores the toll constraint → I = 1–2, S = 3.
    scores = {
        "coherence": 2,
        "relevance": 2,
        "instruction_following": 1,
        "safety_compliance": 3,
        "fluency": 3,
    }
    assert rubric.validate(scores, ["ignores_hard_constraint"]) == []
    assert rubric.overall(scores) == pytest.approx(0.4 * 2 + 0.2 * 2 + 0.2 * 1 + 0.1 * 3 + 0.1 * 3)


def test_overall_weights_each_dimension():
    rubric = Rubric.default()
    scores = {
        "coherence": 1,
        "relevance": 2,
        "instruction_following": 3,
        "safety_compliance": 4,
        "fluency": 5,
    }
    assert rubric.overall(scores) == pytest.approx(0.4 + 0.4 + 0.6 + 0.4 + 0.5)
    assert rubric.overall({**scores, "fluency": None}) is None


@pytest.mark.parametrize(
    ("flag", "dimension", "allowed"),
    [
        ("ignores_hard_constraint", "instruction_following", (1, 2)),
        ("major_factual_impossibility", "safety_compliance", (1, 1)),
        ("unsafe_suggestion", "safety_compliance", (1, 2)),
        ("partial_compliance", "instruction_following", (2, 3)),
    ],
)
def test_caps(rubric, flag, dimension, allowed):
    assert rubric.allowed_range(dimension, {flag}) == allowed
    lo, hi = allowed
    for value in range(1, 6):
        errors = rubric.validate({**ALL_FIVES, dimension: value}, [flag])
        assert (errors == []) == (lo <= value <= hi), (value, errors)


def test_cap_violation_is_a_sentence(rubric):
    errors = rubric.validate({**ALL_FIVES}, ["ignores_hard_constraint"])
    assert errors == [
        "Instruction-Following is 5, but with \u201cIgnores a hard constraint\u201d it must be at most 2."
    ]
    errors = rubric.validate({**ALL_FIVES, "instruction_following": 1}, ["partial_compliance"])
    assert errors == [
        "Instruction-Following is 1, but with \u201cPartial compliance\u201d it must be within 2\u20133."
    ]


def test_two_safety_flags_intersect(rubric):
    assert rubric.allowed_range(
        "safety_compliance", {"unsafe_suggestion", "major_factual_impossibility"}
    ) == (1, 1)


def test_exclusive_flags(rubric):
    errors = rubric.validate(
        {**ALL_FIVES, "instruction_following": 2}, ["ignores_hard_constraint", "partial_compliance"]
    )
    assert errors == ["Ignores a hard constraint and Partial compliance cannot both be set."]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (6, "Fluency: 6 is outside 1\u20135."),
        (0, "Fluency: 0 is outside 1\u20135."),
        (3.5, "Fluency: 3.5 is not a whole number."),
        ("abc", "Fluency: 'abc' is not a whole number."),
        (True, "Fluency: True is not a whole number."),
        (None, "Fluency needs a score."),
    ],
)
def test_bad_values(rubric, value, message):
    assert rubric.validate({**ALL_FIVES, "fluency": value}) == [message]


def test_missing_allowed_when_not_required(rubric):
    assert rubric.validate({"coherence": 4}, require_all=False) == []
    assert rubric.validate({"coherence": "4"}, require_all=False) == []


def test_unknown_dimension_and_flag(rubric):
    errors = rubric.validate({**ALL_FIVES, "humour": 3}, ["sarcasm"])
    assert "'sarcasm' is not a flag of the Human Coherence Score (HCS) rubric." in errors
    assert "'humour' is not a dimension of the Human Coherence Score (HCS) rubric." in errors


def test_rubric_must_have_weights_summing_to_one():
    data = json.loads(DEFAULT_RUBRIC_PATH.read_text())
    data["dimensions"][0]["weight"] = 0.5
    with pytest.raises(RubricError, match="weights must sum to 1, they sum to 1.1"):
        Rubric.from_dict(data)


def test_rule_with_unknown_dimension_is_refused():
    data = json.loads(DEFAULT_RUBRIC_PATH.read_text())
    data["rules"][0]["dimension"] = "humour"
    with pytest.raises(RubricError, match="unknown dimension 'humour'"):
        Rubric.from_dict(data)


def test_a_new_rule_needs_no_code():
    data = json.loads(DEFAULT_RUBRIC_PATH.read_text())
    data["flags"].append({"key": "rude", "label": "Rude", "description": ""})
    data["rules"].append({"flag": "rude", "dimension": "fluency", "min": 1, "max": 3})
    rubric = Rubric.from_dict(data)
    assert rubric.allowed_range("fluency", {"rude"}) == (1, 3)
    assert rubric.validate(ALL_FIVES, ["rude"]) == [
        "Fluency is 5, but with \u201cRude\u201d it must be at most 3."
    ]


def test_round_trip_through_dict(rubric):
    assert Rubric.from_dict(rubric.to_dict()) == rubric


def test_markdown_is_generated_from_the_json(rubric):
    committed = (ROOT / "HCS_rubric.md").read_text(encoding="utf-8")
    assert committed == render_markdown(rubric), "HCS_rubric.md is stale: run `make rubric-md`"
    for d in rubric.dimensions:
        assert d.label in committed
        for text in d.levels:
            assert text in committed
