"""Reading batch files: every bad cell named by row and column; nothing here touches the database."""

import json

import pytest

from annotator.uploads.files.batch_file import parse_batch_file
from annotator.uploads.files.errors import FileRefused

HEADER = "item_id,prompt,response,system_id,prompt_id,context,expected_output,constraints,conversation\n"


def parse(text: str, filename: str = "items.csv", **kwargs):
    return parse_batch_file(text.encode("utf-8"), filename=filename, **kwargs)


def messages(parsed) -> list[str]:
    return [str(e) for e in parsed.errors]


def test_a_good_file_with_every_column():
    conversation = json.dumps(
        [{"role": "user", "content": "To the airport"}, {"role": "assistant", "content": "From where?"}]
    )
    text = HEADER + (
        f'a1,Route to the airport avoiding tolls,Take Route 9,sys-a,,Leaving 5AM,A toll-free route,avoid tolls; arrive before 8AM ,"{conversation.replace(chr(34), chr(34) * 2)}"\n'
        'a2,Route to the airport avoiding tolls,Take I-90,sys-b,,,,"[""avoid tolls""]",\n'
        "b1,Wheelchair route to the museum,Bus 14,sys-a,museum,,,,\n"
    )
    parsed = parse(text)
    assert parsed.ok, messages(parsed)
    assert parsed.row_count == 3
    assert parsed.systems == {"sys-a": 2, "sys-b": 1}
    rows = parsed.preview_rows(3)
    assert rows[0]["constraints"] == ["avoid tolls", "arrive before 8AM"]
    assert rows[1]["constraints"] == ["avoid tolls"]
    assert rows[0]["conversation"][1] == {"role": "assistant", "content": "From where?"}
    assert rows[0]["context"] == "Leaving 5AM" and rows[0]["expected_output"] == "A toll-free route"
    assert list(parsed.rows["position"]) == [0, 1, 2]


def test_prompt_id_defaults_to_one_id_per_distinct_prompt_text():
    text = (
        HEADER
        + "1,Same prompt,r,s1,,,,,\n2,Same prompt,r,s2,,,,,\n3,Other prompt,r,s1,,,,,\n4,Other prompt,r,s2,given,,,,\n"
    )
    ids = list(parse(text).rows["prompt_id"])
    assert ids[0] == ids[1] != ids[2]
    assert ids[3] == "given"
    assert parse(text).prompt_count == 3
    # The same prompt text gets the same id in another file, so later imports group alike.
    assert list(parse(HEADER + "9,Same prompt,r,s3,,,,,\n").rows["prompt_id"]) == [ids[0]]


def test_only_the_three_required_columns_are_needed_and_extra_columns_become_metadata():
    parsed = parse("item_id,prompt,response,difficulty\n1,p,r,hard\n2,p,r,\n")
    assert parsed.ok
    assert parsed.extra_columns == ["difficulty"]
    assert [json.loads(m) for m in parsed.rows["metadata"]] == [{"difficulty": "hard"}, {}]


def test_missing_required_column_is_named():
    parsed = parse("item_id,prompt,system_id\n1,p,s\n")
    assert messages(parsed) == [
        "column `response`: is missing: the file needs the columns item_id, prompt and response"
    ]


def test_duplicate_item_id_names_both_rows():
    parsed = parse("item_id,prompt,response\nx,p,r\ny,p,r\nx,p,r\nx,p,r\n")
    assert messages(parsed) == [
        "row 4, column `item_id`: `x` is already used on row 2",
        "row 5, column `item_id`: `x` is already used on row 2",
    ]


def test_empty_cells_are_named_with_their_spreadsheet_row():
    parsed = parse("item_id,prompt,response\n1,p,r\n2,p,\n3,   ,r\n,p,r\n")
    assert messages(parsed) == [
        "row 3, column `response`: is empty",
        "row 4, column `prompt`: is empty",
        "row 5, column `item_id`: is empty",
    ]


def test_row_numbers_count_records_not_lines_and_survive_blank_lines():
    text = 'item_id,prompt,response\n1,"a prompt\nover two lines",r\n\n2,p,\n'
    assert messages(parse(text)) == ["row 4, column `response`: is empty"]


def test_a_row_with_too_many_cells_is_named_every_time():
    parsed = parse("item_id,prompt,response\n1,p,r,extra\n2,p,r\n3,p,r,x,y\n")
    assert messages(parsed) == [
        "row 2: has 4 cells but the header has 3 columns",
        "row 4: has 5 cells but the header has 3 columns",
    ]


def test_short_rows_mean_blank_trailing_cells():
    parsed = parse("item_id,prompt,response,system_id\n1,p,r\n")
    assert parsed.ok and list(parsed.rows["system_id"]) == [""]


def test_bom_is_tolerated():
    parsed = parse_batch_file("\ufeffitem_id,prompt,response\n1,p,r\n".encode("utf-8"), filename="x.csv")
    assert parsed.ok and list(parsed.rows["item_id"]) == ["1"]


def test_semicolon_separated_csv_from_a_european_spreadsheet():
    parsed = parse("item_id;prompt;response\n1;p, with comma;r\n")
    assert parsed.ok and list(parsed.rows["prompt"]) == ["p, with comma"]


def test_wrong_encoding_is_refused_with_the_line():
    data = "item_id,prompt,response\n1,Café,r\n".encode("latin-1")
    with pytest.raises(FileRefused, match=r"not UTF-8 text: byte 0xe9 on line 2"):
        parse_batch_file(data, filename="x.csv")


def test_oversized_file_is_refused(settings):
    settings.ANNOTATOR_UPLOAD_MAX_BYTES = 10
    with pytest.raises(FileRefused, match=r"the largest file accepted is 10 bytes"):
        parse("item_id,prompt,response\n1,p,r\n")


@pytest.mark.parametrize("text", ["", "  \n\n"])
def test_empty_file_is_refused(text):
    with pytest.raises(FileRefused, match="empty"):
        parse(text)


def test_nul_character_is_refused():
    with pytest.raises(FileRefused, match="NUL"):
        parse("item_id,prompt,response\n1,p\x00,r\n")


def test_header_problems():
    assert messages(parse("item_id,prompt,response,prompt\n1,p,r,p\n")) == [
        "row 1, column `prompt`: appears twice in the header (columns 2 and 4)"
    ]
    assert messages(parse("item_id,,prompt,response\n1,,p,r\n")) == [
        "row 1: column 2 of the header has no name"
    ]


def test_unterminated_quote_is_named():
    errors = messages(parse('item_id,prompt,response\n1,p,r\n2,"never closed,r\n'))
    assert len(errors) == 1 and errors[0].startswith("row 3: cannot be read as CSV")


@pytest.mark.parametrize(
    "cell, message",
    [
        ('"[""avoid tolls"", 3]"', "column `constraints`: must be a JSON list of texts"),
        ('"[avoid tolls"', "column `constraints`: starts like a JSON list but is not valid JSON"),
    ],
)
def test_bad_constraints(cell, message):
    errors = messages(parse(f"item_id,prompt,response,constraints\n1,p,r,{cell}\n"))
    assert len(errors) == 1 and errors[0].startswith(f"row 2, {message}")


@pytest.mark.parametrize(
    "value, message",
    [
        ("[{bad json", "is not valid JSON"),
        ('{"role": "user", "content": "x"}', "must be a JSON list of turns"),
        ('[{"role": "user"}]', "turn 1 must be an object with text fields `role` and `content`"),
        ('[{"role": "user", "content": "a"}, "hello"]', "turn 2 must be an object"),
        ('[{"role": "", "content": "a"}]', "turn 1 has an empty `role`"),
        ('[{"role": "user", "content": "a", "name": "x"}]', "turn 1 has unknown fields: name"),
    ],
)
def test_bad_conversation(value, message):
    cell = '"' + value.replace('"', '""') + '"'
    errors = messages(parse(f"item_id,prompt,response,conversation\n1,p,r,{cell}\n"))
    assert len(errors) == 1
    assert errors[0].startswith("row 2, column `conversation`: " + message)


def test_item_id_too_long():
    errors = messages(parse(f"item_id,prompt,response\n{'x' * 201},p,r\n"))
    assert errors == ["row 2, column `item_id`: is longer than 200 characters"]


# ---------------------------------------------------------------------------- JSONL


def test_jsonl_with_native_lists_and_numbers():
    lines = [
        {
            "item_id": 1,
            "prompt": "p",
            "response": "r",
            "constraints": ["avoid tolls"],
            "conversation": [{"role": "user", "content": "hi"}],
            "metadata": {"split": "dev"},
        },
        {"item_id": "2", "prompt": "p", "response": "r", "constraints": "a; b", "system_id": None},
    ]
    parsed = parse("\n".join(json.dumps(x) for x in lines) + "\n", filename="items.jsonl")
    assert parsed.ok, messages(parsed)
    rows = parsed.preview_rows()
    assert [r["item_id"] for r in rows] == ["1", "2"]
    assert rows[0]["constraints"] == ["avoid tolls"] and rows[1]["constraints"] == ["a", "b"]
    assert rows[0]["conversation"] == [{"role": "user", "content": "hi"}]
    assert rows[0]["metadata"] == {"split": "dev"}


def test_jsonl_bad_lines_are_named_by_line():
    text = '{"item_id": "1", "prompt": "p", "response": "r"}\n{"item_id": "2", "prompt": "p",\n\n[1, 2]\n{"item_id": "3", "prompt": "p", "response": ""}\n'
    errors = messages(parse(text, filename="x.jsonl"))
    assert errors[0].startswith("line 2: is not valid JSON")
    assert errors[1:] == [
        'line 4: must be a JSON object like {"item_id": ...}',
        "line 5, key `response`: is empty",
    ]


def test_jsonl_nul_escape_is_refused():
    errors = messages(parse('{"item_id": "1", "prompt": "p\\u0000", "response": "r"}\n', filename="x.jsonl"))
    assert errors == ["line 1, key `prompt`: contains a NUL character"]


def test_format_is_detected_from_content_when_the_name_says_nothing():
    assert parse('{"item_id": "1", "prompt": "p", "response": "r"}\n', filename="upload").format == "jsonl"
    assert parse("item_id,prompt,response\n1,p,r\n", filename="upload").format == "csv"


def test_bom_is_tolerated_in_jsonl_too():
    data = '\ufeff{"item_id": "1", "prompt": "p", "response": "r"}\n'.encode("utf-8")
    parsed = parse_batch_file(data, filename="x.jsonl")
    assert parsed.ok and list(parsed.rows["item_id"]) == ["1"]


def test_utf16_from_a_spreadsheet_is_refused_as_not_utf8():
    with pytest.raises(FileRefused, match="not UTF-8 text: byte 0xff on line 1"):
        parse_batch_file("item_id,prompt,response\n1,p,r\n".encode("utf-16"), filename="x.csv")


def test_jsonl_key_given_twice_is_named():
    errors = messages(
        parse('{"item_id": "1", "Prompt": "a", "prompt": "b", "response": "r"}\n', filename="x.jsonl")
    )
    assert errors == ["line 1: has the same key twice (keys ignore case)"]


def test_a_jsonl_line_with_the_reserved_row_key_is_an_error_not_a_crash():
    # Found by the API fuzz test: the refused line's key used to stay a column, filled with row numbers.
    data = (
        b'{"item_id": "a", "prompt": "p", "response": "r"}\n{"item_id": "b", "prompt": "p", "__row__": 1}\n'
    )
    parsed = parse_batch_file(data, filename="x.jsonl")
    assert [str(e) for e in parsed.errors] == ["line 2, key `__row__`: is a reserved name; rename the key"]
    assert parsed.columns == ["item_id", "prompt", "response"]


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        # The parser's own message ends in "at": said once, not "starting at at character 2".
        (
            '"[""avoid tolls]"',
            "starts like a JSON list but is not valid JSON (Unterminated string starting at character 2)",
        ),
        (
            '"[""a"" ""b""]"',
            "starts like a JSON list but is not valid JSON (Expecting ',' delimiter at character 6)",
        ),
    ],
)
def test_a_json_cell_error_says_where_once(cell, expected):
    parsed = parse(HEADER + f"a1,p,r,,,,,{cell},\n")
    assert messages(parsed) == [f"row 2, column `constraints`: {expected}"]
