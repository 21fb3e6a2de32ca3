"""The pieces the long exports are assembled from: record parts written once and joined, chunks
of whole records, scores packed into integers, timestamps read with psycopg's compiled loader."""

import itertools
import random
from datetime import datetime

import pytest
from django.db import connection
from django.utils import timezone

from annotator.db_rows import chunked_cursor
from annotator.models import Annotation, Batch, Item
from annotator.reports.exports import csv_safe
from annotator.reports.exports.csv_safe import (
    DELIMITER,
    RECORD_END,
    Echo,
    SafeWriter,
    chunks,
    csv_lines,
    defuse,
    defuse_all,
)
from annotator.reports.selectors.rows import annotation_records
from annotator.reports.selectors.score_packing import Packing
from hcs.rubric import Rubric
from tests.factories import make_annotation, make_user

CELLS = [
    "",
    None,
    "plain",
    "=1+1",
    "'=quoted",
    "''-2",
    "-0.25",
    "-- note",
    "@x",
    "\t=tab",
    "a,b",
    'say "hi"',
    "x\r=1",
    "\n",
    "c\r\nd",
    " ",
    "Ünïcode ✓",
    0,
    -3,
    2.5,
    float("nan"),
    True,
    False,
]


def test_defuse_all_is_defuse_on_every_cell():
    assert defuse_all(CELLS) == [defuse(c) for c in CELLS]


def test_records_joined_from_parts_are_what_writerow_writes():
    writer = SafeWriter(Echo())
    rng = random.Random(7)
    rows = [list(p) for p in itertools.product(["", None, "=x", "a,b"], repeat=3)]
    rows += [rng.choices(CELLS, k=rng.randint(2, 9)) for _ in range(500)]
    for row in rows:
        cut = rng.randint(1, len(row) - 1)
        joined = writer.cells(row[:cut]) + DELIMITER + writer.cells(row[cut:]) + RECORD_END
        assert joined == writer.writerow(row), row


def test_a_part_of_one_empty_cell_is_empty_not_quoted():
    writer = SafeWriter(Echo())
    assert (
        writer.writerow([""]) == '""\r\n'
    )  # a record of one empty cell is quoted, so it is not a blank line
    assert writer.cells([""]) == "" and writer.cells([None]) == ""
    assert writer.cells(["a"]) + DELIMITER + writer.cells([""]) + RECORD_END == writer.writerow(["a", ""])


def test_chunks_hold_whole_records_and_the_same_text(monkeypatch):
    monkeypatch.setattr(csv_safe, "CHUNK_CHARS", 50)
    rows = [[n, "x" * (n % 7), "=f", "a\r\nb"] for n in range(40)]
    pieces = list(csv_lines(["n", "text", "formula", "lines"], rows))
    writer = SafeWriter(Echo())
    records = [writer.writerow(["n", "text", "formula", "lines"]), *map(writer.writerow, rows)]
    assert "".join(pieces) == "".join(records)
    assert len(pieces) > 1 and len(pieces) < len(records)  # chunked, several records per chunk
    ends = set(itertools.accumulate(len(r) for r in records))
    assert all(end in ends for end in itertools.accumulate(len(p) for p in pieces))  # never inside a record
    assert list(chunks("h\r\n", [])) == ["h\r\n"]


@pytest.mark.parametrize("n_dims", [1, 5, 11, 12, 23])
def test_packing_gives_back_every_score(n_dims):
    packing = Packing(tuple(f"d{n}" for n in range(n_dims)), 1, 5)
    assert [d for g in packing.groups for d in g] == list(packing.dims)
    rng = random.Random(n_dims)
    for _ in range(200):
        scores = tuple(rng.choice([None, 1, 2, 3, 4, 5]) for _ in range(n_dims))
        columns = [
            sum(
                0
                if scores[packing.dims.index(d)] is None
                else scores[packing.dims.index(d)] * packing.base**j
                for j, d in enumerate(group)
            )
            for group in packing.groups
        ]
        assert max(columns) < 2**31
        assert packing.unpack(columns) == scores


@pytest.mark.django_db
def test_records_carry_scores_of_a_rubric_with_two_packed_columns():
    data = Rubric.default().to_dict()
    levels = {str(v): f"level {v}" for v in range(1, 6)}
    data["dimensions"] = [
        {"key": f"d{n}", "label": f"D{n}", "weight": 1 / 12, "levels": levels} for n in range(12)
    ]
    data["rules"], data["flags"], data["exclusive_flags"], data["examples"] = [], [], [], []
    batch = Batch.objects.create(name="twelve", rubric=data, k=3)
    item = Item.objects.create(batch=batch, item_id="x", prompt="p", response="r")
    expected = []
    now = timezone.now()
    for j in range(3):
        scores = {f"d{n}": 1 + (n * 3 + j * 7) % 5 for n in range(12)}
        scores["d11"] = None if j == 1 else scores["d11"]  # the second column empty
        scores["d3"] = None if j == 2 else scores["d3"]
        make_annotation(item, make_user(f"twelve{j}"), scores, submitted_at=now)
        expected.append(tuple(scores[f"d{n}"] for n in range(12)))
    assert [r.scores for r in annotation_records(batch=batch)] == expected


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor != "postgresql", reason="psycopg's loaders: PostgreSQL only")
def test_chunked_cursor_reads_timestamps_as_django_does():
    item = Item.objects.create(
        batch=Batch.objects.create(name="times", rubric=Rubric.default().to_dict(), k=3),
        item_id="x",
        prompt="p",
        response="r",
    )
    users = [make_user(f"t{n}") for n in range(4)]
    for user, when in zip(
        users,
        [
            "2024-02-29T23:59:58.123456Z",
            "2024-03-01T00:00:00Z",
            "1999-12-31T12:30:05.000007Z",
            "2024-07-01T12:00:00+02:00",
        ],
        strict=True,
    ):
        make_annotation(item, user, {"coherence": 3}, submitted_at=datetime.fromisoformat(when))
    sql = f"SELECT submitted_at FROM {Annotation._meta.db_table} ORDER BY id"
    with connection.cursor() as cursor:
        cursor.execute(sql)
        django = [r[0] for r in cursor.fetchall()]
    with chunked_cursor() as cursor:
        cursor.execute(sql)
        compiled = [r[0] for r in cursor.fetchall()]
    assert compiled == django
    assert [t.tzinfo for t in compiled] == [t.tzinfo for t in django]
    assert [t.isoformat() for t in compiled] == [t.isoformat() for t in django]
