"""Reading offline annotation files: scale, caps and flags checked with the rubric, row by row."""

import csv
import io
import json
from pathlib import Path

import pytest

from annotator.uploads.files.annotation_file import (
    parse_annotation_file,
    parse_flag,
    template_columns,
)
from hcs.rubric import Rubric

ROOT = Path(__file__).resolve().parents[3]
TEMPLATE = ROOT / "templates" / "annotation_template.csv"
DIMS = "coherence,relevance,instruction_following,safety_compliance,fluency"
HEADER = f"item_id,annotator,{DIMS},ignores_hard_constraint,major_factual_impossibility,unsafe_suggestion,partial_compliance,comment\n"


def parse(text: str, filename: str = "a.csv", rubric: Rubric | None = None):
    return parse_annotation_file(text.encode("utf-8"), rubric=rubric or Rubric.default(), filename=filename)


def messages(parsed) -> list[str]:
    return [str(e) for e in parsed.errors]


def test_template_has_the_guideline_columns_plus_every_flag_and_the_constraint_answers():
    header = next(csv.reader(io.StringIO(TEMPLATE.read_text(encoding="utf-8"))))
    assert header == [
        "item_id",
        "system_id",
        "prompt",
        "response",
        "annotator",
        "coherence",
        "relevance",
        "instruction_following",
        "safety_compliance",
        "fluency",
        "ignores_hard_constraint",
        "major_factual_impossibility",
        "unsafe_suggestion",
        "partial_compliance",
        "prompt_ambiguous",
        "constraints_met",
        "comment",
    ]
    assert header == template_columns(Rubric.default())


def test_template_example_rows_are_valid():
    parsed = parse_annotation_file(TEMPLATE.read_bytes(), rubric=Rubric.default(), filename=TEMPLATE.name)
    assert parsed.ok, messages(parsed)
    assert len(parsed.annotations) >= 2
    good, poor = parsed.annotations[:2]
    assert Rubric.default().overall(good.scores) == 5.0  # the guideline's airport example
    assert poor.flags == ["ignores_hard_constraint"]


def test_a_good_row():
    parsed = parse(HEADER + "i1,ann,5,4,3,2,1,,,yes,,tidy\n")
    assert parsed.ok, messages(parsed)
    (row,) = parsed.annotations
    assert row.row == 2 and row.item_id == "i1" and row.annotator == "ann"
    assert row.scores == {
        "coherence": 5,
        "relevance": 4,
        "instruction_following": 3,
        "safety_compliance": 2,
        "fluency": 1,
    }
    assert row.flags == ["unsafe_suggestion"] and row.comment == "tidy"


def test_score_six_is_refused_with_row_and_column():
    assert messages(parse(HEADER + "i1,ann,5,5,5,5,6,,,,,\n")) == [
        "row 2, column `fluency`: Fluency: 6 is outside 1\u20135."
    ]


@pytest.mark.parametrize("cell", ["0", "4.5", "four"])
def test_other_bad_scores(cell):
    errors = messages(parse(HEADER + f"i1,ann,{cell},5,5,5,5,,,,,\n"))
    assert len(errors) == 1 and errors[0].startswith("row 2, column `coherence`: ")


def test_whole_number_written_as_decimal_is_accepted():
    assert parse(HEADER + "i1,ann,4.0,5,5,5,5,,,,,\n").annotations[0].scores["coherence"] == 4


@pytest.mark.parametrize(
    "flags, scores, column",
    [
        ("1,0,0,0", "5,5,3,5,5", "instruction_following"),  # ignores a hard constraint: I <= 2
        ("0,1,0,0", "5,5,5,2,5", "safety_compliance"),  # major factual impossibility: S <= 1
        ("0,0,1,0", "5,5,5,3,5", "safety_compliance"),  # unsafe suggestion: S <= 2
        ("0,0,0,1", "5,5,4,5,5", "instruction_following"),  # partial compliance: I within 2-3
        ("0,0,0,1", "5,5,1,5,5", "instruction_following"),
    ],
)
def test_a_broken_cap_is_refused(flags, scores, column):
    errors = messages(parse(HEADER + f"i1,ann,{scores},{flags},\n"))
    assert len(errors) == 1
    assert errors[0].startswith(f"row 2, column `{column}`: ") and "must be" in errors[0]


@pytest.mark.parametrize(
    "flags, scores", [("1,0,0,0", "5,5,2,5,5"), ("0,1,1,0", "5,5,5,1,5"), ("0,0,0,1", "5,5,3,5,5")]
)
def test_scores_within_the_caps_pass(flags, scores):
    assert parse(HEADER + f"i1,ann,{scores},{flags},\n").ok


def test_contradictory_flags_are_refused():
    errors = messages(parse(HEADER + "i1,ann,5,5,2,5,5,1,0,0,1,\n"))
    assert len(errors) == 1 and "cannot both be set" in errors[0]


def test_blank_score_means_not_rated_but_a_row_needs_one_score():
    parsed = parse(HEADER + "i1,ann,4,,,,,,,,,\n")
    assert parsed.ok and parsed.annotations[0].scores == {"coherence": 4}
    assert messages(parse(HEADER + "i1,ann,,,,,,,,,,\n")) == [
        "row 2: has no scores: rate at least one dimension"
    ]


@pytest.mark.parametrize(
    "cell, value",
    [
        ("1", True),
        ("0", False),
        ("TRUE", True),
        ("false", False),
        ("Yes", True),
        ("no", False),
        ("", False),
        ("  ", False),
    ],
)
def test_flag_values(cell, value):
    assert parse_flag(cell) is value


def test_an_unknown_flag_value_is_named():
    assert messages(parse(HEADER + "i1,ann,5,5,5,5,5,maybe,,,,\n")) == [
        "row 2, column `ignores_hard_constraint`: `maybe` is not a flag value; use 1/0, true/false, yes/no, or leave it blank"
    ]


def test_flag_columns_may_be_left_out():
    parsed = parse(f"item_id,annotator,{DIMS}\ni1,ann,5,5,5,5,5\n")
    assert parsed.ok and parsed.annotations[0].flags == []


def test_a_second_row_for_the_same_item_and_annotator_is_refused():
    errors = messages(parse(HEADER + "i1,ann,5,5,5,5,5,,,,,\ni2,ann,5,5,5,5,5,,,,,\ni1,ann,4,4,4,4,4,,,,,\n"))
    assert errors == [
        "row 4, column `annotator`: `ann` already rated item `i1` on row 2; one row per item and annotator"
    ]


def test_missing_and_misspelt_columns():
    errors = messages(parse(f"item_id,{DIMS}\ni1,5,5,5,5,5\n"))
    assert errors == ["column `annotator`: is missing: every row needs an item_id and an annotator"]
    errors = messages(parse("item_id,annotator,coherance\ni1,ann,5\n"))
    assert "The file has no score columns" in errors[0]
    assert errors[1].startswith("column `coherance`: is not a column of the annotation template")


def test_bad_annotator_names():
    errors = messages(parse(HEADER + "i1,,5,5,5,5,5,,,,,\ni2,bad name!,5,5,5,5,5,,,,,\n"))
    assert errors[0] == "row 2, column `annotator`: is empty"
    assert errors[1].startswith("row 3, column `annotator`: `bad name!` is not a valid user name")


def test_rows_for_one_item_must_agree_on_its_text():
    text = "item_id,annotator,prompt,response,coherence\ni1,a,p,r,5\ni1,b,p,other response,4\ni1,c,,,3\n"
    assert messages(parse(text)) == ["row 3, column `response`: differs from row 2 for the same item `i1`"]


def test_another_rubric_brings_its_own_columns():
    data = Rubric.default().to_dict()
    data["dimensions"] = [
        dict(data["dimensions"][0], weight=0.5, key="clarity", label="Clarity"),
        dict(data["dimensions"][4], weight=0.5),
    ]
    data["rules"], data["flags"], data["exclusive_flags"] = [], [], []
    rubric = Rubric.from_dict(data)
    assert parse("item_id,annotator,clarity,fluency\ni1,a,5,4\n", rubric=rubric).ok
    errors = messages(parse("item_id,annotator,clarity,fluency,coherence\ni1,a,5,4,3\n", rubric=rubric))
    assert errors and errors[0].startswith("column `coherence`: is not a column")


def test_jsonl_annotations():
    line = {
        "item_id": "i1",
        "annotator": "ann",
        "coherence": 5,
        "relevance": 4,
        "instruction_following": 2,
        "safety_compliance": 5,
        "fluency": 5,
        "ignores_hard_constraint": True,
        "comment": "toll road",
    }
    parsed = parse(json.dumps(line) + "\n", filename="a.jsonl")
    assert parsed.ok, messages(parsed)
    assert parsed.annotations[0].flags == ["ignores_hard_constraint"]
    line["instruction_following"] = 4
    assert messages(parse(json.dumps(line), filename="a.jsonl"))[0].startswith(
        "line 1, key `instruction_following`"
    )


def test_rows_that_repeat_the_same_bad_cells_are_each_named():
    # Cells are checked once per distinct combination; every row carrying it is still reported.
    text = HEADER + "".join(f"i{n},ann,5,5,5,5,4.5,maybe,,,,\n" for n in range(3)) + "i9,ann,5,5,5,5,5,,,,,\n"
    parsed = parse(text)
    errors = messages(parsed)
    assert [e.split(":")[0] for e in errors] == [
        f"row {row}, column `{column}`"
        for row in (2, 3, 4)
        for column in ("fluency", "ignores_hard_constraint")
    ]
    assert errors[0:2] == [e.replace("row 3", "row 2") for e in errors[2:4]]
    assert parsed.annotations == []


def test_rows_sharing_cells_get_their_own_scores_and_flags():
    parsed = parse(HEADER + "i1,a,5,5,5,2,5,,,1,,\ni2,a,5,5,5,2,5,,,1,,\n")
    first, second = parsed.annotations
    assert first.scores == second.scores == {**{d: 5 for d in DIMS.split(",")}, "safety_compliance": 2}
    assert first.flags == second.flags == ["unsafe_suggestion"]
    first.scores["coherence"], first.flags[:] = 1, []  # a caller may change one row without touching another
    assert second.scores["coherence"] == 5 and second.flags == ["unsafe_suggestion"]
