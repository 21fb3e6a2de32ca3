"""Whatever bytes arrive, the parsers answer with row errors or a refusal, never an exception."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotator.uploads.files.annotation_file import parse_annotation_file
from annotator.uploads.files.batch_file import parse_batch_file
from annotator.uploads.files.errors import FileRefused
from hcs.rubric import Rubric

CELLS = st.text(alphabet=st.sampled_from(list('ab,;"\n\r\t {}[]:0156\\é') + ["\ufeff", "\x00"]), max_size=60)
HEADERS = st.sampled_from(
    [
        "item_id,prompt,response",
        "item_id,prompt,response,constraints,conversation",
        "item_id,annotator,coherence,fluency,unsafe_suggestion",
        "",
    ]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(header=HEADERS, body=CELLS, name=st.sampled_from(["x.csv", "x.jsonl", "x"]))
def test_parsers_never_raise_anything_but_a_refusal(header, body, name):
    data = (header + "\n" + body).encode("utf-8")
    for parse in (
        lambda: parse_batch_file(data, filename=name),
        lambda: parse_annotation_file(data, rubric=Rubric.default(), filename=name),
    ):
        try:
            result = parse()
        except FileRefused:
            continue
        for error in result.errors:
            assert str(error)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes(data):
    try:
        parse_batch_file(data, filename="x.csv")
    except FileRefused:
        pass


def test_reserved_column_name():
    parsed = parse_batch_file(b"item_id,prompt,response,__row__\n1,p,r,5\n", filename="x.csv")
    assert [str(e) for e in parsed.errors] == [
        "row 1, column `__row__`: is a reserved name; rename the column"
    ]
    with pytest.raises(FileRefused):
        parse_batch_file(b"", filename="x.csv")
