"""The row-loop skeleton the import parsers share: header needs, the per-row loop, row-numbered errors."""

import ast
from pathlib import Path

import pytest

from annotator.uploads.files.errors import RowError
from annotator.uploads.files.reading import read_table
from annotator.uploads.files.row_loop import Need, RowLoop

ROOT = Path(__file__).resolve().parents[3]


def loop_for(text: str, filename: str = "f.csv") -> RowLoop:
    return RowLoop(read_table(text.encode("utf-8"), filename=filename))


def test_need_one_reports_each_missing_column_at_file_level_in_order():
    loop = loop_for("item_id,score\na,1\n")
    missing = loop.need(Need.one("item_id", "is missing"), Need.one("dimension", "is missing: add it"))
    assert missing == ["dimension"]
    assert loop.errors == [RowError(None, "dimension", "is missing: add it")]
    assert loop.header_refused


def test_need_any_of_is_met_by_one_of_its_columns_and_reported_on_the_first():
    need = Need.any_of(("score", "raw_output"), "give one")
    assert loop_for("raw_output\nx\n").need(need) == []
    loop = loop_for("reason\nx\n")
    assert loop.need(need) == ["score"]
    assert [str(e) for e in loop.errors] == ["column `score`: give one"]


def test_a_need_of_groups_wants_every_column_of_one_group():
    need = Need((("prompt_id",), ("baseline_item_id", "enhanced_item_id")), "prompt_id", "name the pair")
    assert loop_for("baseline_item_id,enhanced_item_id\na,b\n").need(need) == []
    assert loop_for("prompt_id\np\n").need(need) == []
    assert loop_for("baseline_item_id,winner\na,tie\n").need(need) == ["prompt_id"]


def test_header_errors_of_the_reader_come_first_and_refuse_the_header():
    loop = loop_for("item_id,item_id\na,b\n")
    assert loop.errors and loop.errors[0].row == 1
    assert loop.header_refused
    assert not loop_for("item_id\na\n").header_refused


def test_each_keeps_rows_without_problems_and_reports_the_others_by_file_row():
    # The blank record on row 3 is skipped by the reader, so the records are rows 2, 4 and 5.
    loop = loop_for("item_id,score\na,1\n,\nb,x\nc,3\n")
    scores = loop.text("score")

    def check(i, row, problems):
        if not scores[i].isdigit():
            problems.append(loop.error(row, "score", "is not a number"))
        return (loop.text("item_id")[i], row)

    assert loop.each(check) == [("a", 2), ("c", 5)]
    assert [str(e) for e in loop.errors] == ["row 4, column `score`: is not a number"]


def test_jsonl_errors_name_lines_and_keys():
    loop = loop_for('{"item_id": "a"}\n\n{"item_id": ""}\n', filename="f.jsonl")
    loop.flag([i for i, c in enumerate(loop.text("item_id")) if not c], "item_id", "is empty")
    assert [str(e) for e in loop.errors] == ["line 3, key `item_id`: is empty"]


def test_text_of_an_absent_column_is_blank_cells():
    loop = loop_for("item_id\na\nb\n")
    assert loop.text("reason") == ["", ""]
    assert loop.has("item_id") and not loop.has("reason")
    assert len(loop) == 2 and list(loop.rows) == [2, 3]


def test_the_two_orders_of_errors():
    loop = loop_for("zeta,alpha\n1,2\n3,4\n")
    loop.add(3, "alpha", "late")
    loop.add(2, "alpha", "second column")
    loop.add(2, "zeta", "first column")
    loop.add(None, None, "the file")
    by_name = loop.sorted_by_row_then_column_name()
    assert [e.message for e in by_name] == ["the file", "second column", "first column", "late"]
    assert [e.message for e in loop.errors][0] == "late"  # a copy: the list itself is not sorted
    in_file_order = loop.sort_by_row_then_file_column()
    assert in_file_order is loop.errors
    assert [e.message for e in loop.errors] == ["the file", "first column", "second column", "late"]


@pytest.mark.parametrize(
    "path, name",
    [
        ("annotator/uploads/files/batch_file.py", "parse_batch_table"),
        ("annotator/uploads/files/annotation_file.py", "parse_annotation_table"),
        ("annotator/judges/imports/judge_file.py", "parse_judge_table"),
        ("annotator/judges/imports/verdict_file.py", "parse_verdict_file"),
    ],
)
def test_each_parser_runs_on_the_skeleton_in_about_forty_lines(path, name):
    source = (ROOT / path).read_text()
    (function,) = [
        node
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef) and node.name == name
    ]
    assert function.end_lineno - function.lineno + 1 <= 45
    assert any(
        isinstance(node, ast.Call) and getattr(node.func, "id", None) == "RowLoop"
        for node in ast.walk(function)
    )
