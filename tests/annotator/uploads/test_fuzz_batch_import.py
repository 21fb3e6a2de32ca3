"""Fuzzed batch files through the import service (parse, check, save): every file either makes a
batch with all its rows or is refused with errors, and a refusal saves nothing."""

import os
import resource

import pytest
from django.test import override_settings
from hypothesis import event, given
from hypothesis import strategies as st

from annotator.models import Batch, Item
from annotator.uploads.files.batch_file import parse_batch_file
from annotator.uploads.files.errors import FileRefused, ImportRefused
from annotator.uploads.files.reading import read_table
from annotator.uploads.services.batches import batch_import_file
from hcs.rubric import Rubric
from tests.annotator.fuzz_support import (
    FORMULAS,
    FUZZ,
    record,
    rolled_back,
    row_counts,
    upload_files,
)

pytestmark = pytest.mark.django_db

COLUMNS = [
    "item_id",
    "prompt",
    "response",
    "system_id",
    "prompt_id",
    "context",
    "expected_output",
    "constraints",
    "conversation",
    "metadata",
]
GOOD_CELLS = {
    "item_id": [f"a{i}" for i in range(12)] + ["x" * 201, ""],
    "prompt": ["Plan a route avoiding tolls.", *FORMULAS],
    "response": ["Take Route 9.", "<script>alert(1)</script>", "Turn left."],
    "system_id": ["sys-a", "sys-b", "s" * 201],
    "prompt_id": ["p1", "p2", "p" * 201],
    "constraints": ["avoid tolls; arrive before 8AM", '["a", "b"]', "[1, 2]", '{"a": 1}', "[", ""],
    "conversation": ['[{"role": "user", "content": "hi"}]', "[1]", '[{"role": 5}]', "nope", '"x"', "[]"],
    "metadata": ['{"a": 1}', "[1]", "{", '{"a": {"b": [1, null]}}'],
}


@FUZZ
@given(
    file=upload_files(COLUMNS, GOOD_CELLS, required=3),
    k=st.sampled_from([3, 5, 2]),
    max_bytes=st.sampled_from([50 * 1024 * 1024, 50 * 1024 * 1024, 300]),
)
def test_any_batch_file_imports_whole_or_not_at_all(file, k, max_bytes):
    record("batch importer")
    data, filename = file
    with rolled_back(), override_settings(ANNOTATOR_UPLOAD_MAX_BYTES=max_bytes):
        before = row_counts(Batch, Item)
        try:
            batch = batch_import_file(
                data=data, filename=filename, name="fuzzed", k=k, rubric=Rubric.default()
            )
        except FileRefused as exc:
            event("file refused")
            assert str(exc)
            assert row_counts(Batch, Item) == before
        except ImportRefused as exc:
            event("rows refused")
            assert exc.errors and all(str(e) for e in exc.errors)
            assert row_counts(Batch, Item) == before
        else:
            event("imported")
            n = batch.items.count()
            assert n > 0
            assert row_counts(Batch, Item) == {"Batch": before["Batch"] + 1, "Item": before["Item"] + n}
            # Text is stored as given: formulas are defused on the way out (exports), not on the way in.
            assert all(len(i) <= 200 for i in batch.items.values_list("item_id", flat=True))


def test_formula_cells_are_stored_verbatim():
    data = b'item_id,prompt,response\nf1,"=HYPERLINK(""http://x"")",+SUM(A1)\n'
    batch = batch_import_file(data=data, filename="f.csv", name="formulas", k=3, rubric=Rubric.default())
    item = batch.items.get()
    assert (item.prompt, item.response) == ('=HYPERLINK("http://x")', "+SUM(A1)")


# Found by the fuzz test: JSON cells and lines with an integer of more than 4,300 digits, or nested
# deeper than the recursion limit, raised ValueError / RecursionError (a server error on upload).
HOSTILE_JSON = ["9" * 5000, "[" + "9" * 5000 + "]", "[" * 5000 + "]" * 5000, '{"a": ' + "9" * 5000 + "}"]


@pytest.mark.parametrize("column", ["constraints", "conversation", "metadata"])
@pytest.mark.parametrize("cell", HOSTILE_JSON)
def test_hostile_json_cells_are_row_errors(column, cell):
    data = f"item_id,prompt,response,{column}\na1,p,r,{cell}\n".encode()
    parsed = parse_batch_file(data, filename="f.csv")
    if column == "constraints" and not cell.startswith("["):
        assert parsed.errors == []  # plain text, `;`-separated: no JSON involved
    else:
        assert [(e.row, e.column) for e in parsed.errors] == [(2, column)]


@pytest.mark.parametrize("line", HOSTILE_JSON)
def test_hostile_json_lines_are_line_errors(line):
    data = ('{"item_id": "a1", "prompt": "p", "response": "r"}\n' + line + "\n").encode()
    parsed = parse_batch_file(data, filename="f.jsonl")
    assert [(e.row, e.unit) for e in parsed.errors] == [(2, "line")]


@pytest.mark.parametrize("text", HOSTILE_JSON)
def test_hostile_rubric_file_is_a_form_error(text):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from annotator.uploads.forms import UploadForm

    form = UploadForm(
        {"mode": "batch", "name": "b", "k": 3},
        {
            "file": SimpleUploadedFile("f.csv", b"item_id,prompt,response\na,p,r\n"),
            "rubric_file": SimpleUploadedFile("r.json", text.encode()),
        },
    )
    assert not form.is_valid()
    assert "rubric_file" in form.errors


# Found with the fuzz strategies on PostgreSQL: JSON's \u0000 escape put a NUL character into
# metadata, constraint lists, comments and judge reasons, which PostgreSQL refuses (a server error).
GOOD_LINE = '{"item_id": "ok", "prompt": "p", "response": "r", "metadata": {}, "constraints": []}\n'


@pytest.mark.parametrize(
    "line, key",
    [
        ('{"item_id": "a", "prompt": "p", "response": "r", "metadata": {"x": "\\u0000"}}', "metadata"),
        ('{"item_id": "a", "prompt": "p", "response": "r", "constraints": ["ok", "\\u0000"]}', "constraints"),
        ('{"item_id": "a", "prompt": "p", "response": "r", "extra\\u0000": "x"}', "extra\\u0000"),
        ('{"item_id": "a", "prompt": "p\\u0000", "response": "r"}', "prompt"),
    ],
)
def test_nul_smuggled_in_as_json_escape_is_a_line_error(line, key):
    before = row_counts(Batch, Item)
    with pytest.raises(ImportRefused) as refused:
        batch_import_file(
            data=(GOOD_LINE + line + "\n").encode(),
            filename="f.jsonl",
            name="nul",
            k=3,
            rubric=Rubric.default(),
        )
    assert [str(e) for e in refused.value.errors] == [f"line 2, key `{key}`: contains a NUL character"]
    assert row_counts(Batch, Item) == before


@pytest.mark.parametrize("column, cell", [("metadata", '{"x": "\\u0000"}'), ("constraints", '["\\u0000"]')])
def test_nul_in_a_csv_json_cell_is_a_row_error(column, cell):
    quoted = '"' + cell.replace('"', '""') + '"'
    data = f"item_id,prompt,response,{column}\na,p,r,{quoted}\n".encode()
    with pytest.raises(ImportRefused) as refused:
        batch_import_file(data=data, filename="f.csv", name="nul", k=3, rubric=Rubric.default())
    assert [(e.row, e.column) for e in refused.value.errors] == [(2, column)]
    assert "NUL" in str(refused.value)


def test_one_very_wide_row_is_named_without_exhausting_memory():
    """Found by the fuzz test: pandas' C parser makes every row as wide as the widest, so a 0.6 MB file
    with one row of 280,000 cells among 200 asked for gigabytes (the test worker was killed for memory).
    Such a file is read record by record and the row named. Read in a child process held to 1.5 GB more
    than the test process maps, so that a regression fails this test instead of exhausting the machine."""
    header = ",".join(COLUMNS).encode()
    data = (
        header
        + b"\na1,p,r"
        + "\u00e9,".encode() * 280_000
        + b"\n"
        + b"".join(b"b%d,p,r\n" % n for n in range(205))
    )
    pid = os.fork()
    if pid == 0:  # the child: only the parser, no database
        mapped = int(open("/proc/self/statm").read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        cap = mapped + 1_500_000_000  # what the test process already maps, and 1.5 GB more
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        try:
            table = read_table(data, filename="f.csv")
            ok = [str(e) for e in table.errors] == ["row 2: has 280003 cells but the header has 10 columns"]
            os._exit(0 if ok and len(table.frame) == 205 else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r"])
def test_every_kind_of_line_end_numbers_the_rows_alike(end):
    data = (
        end.join([b"item_id,prompt,response", b"x" + b",y" * 140_000, *[b"i%d,p,r" % n for n in range(400)]])
        + end
    )
    table = read_table(data, filename="f.csv")
    assert [str(e) for e in table.errors] == ["row 2: has 140001 cells but the header has 3 columns"]
    assert table.frame["__row__"].tolist() == list(range(3, 403))
    assert table.frame["item_id"].tolist()[-1] == "i399" and table.frame["response"].tolist()[-1] == "r"
