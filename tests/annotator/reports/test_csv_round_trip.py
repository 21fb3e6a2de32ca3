"""Every CSV the app writes reads back as the same rows with Python's ``csv`` and with pandas, a
bare carriage return cannot split a record (issue 10, defect 1), and the annotations export
imports back unchanged, formula-like text included."""

import csv
import io

import pandas as pd
import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotator.models import Annotation, Batch, Item, Judge, JudgeScore, PairwiseVerdict, Score
from annotator.reports.exports.csv_safe import DANGEROUS_START, PLAIN_NUMBER
from annotator.reports.exports.formats import EXPORT_FORMATS
from tests.factories import make_annotation, make_batch, make_user

pytestmark = pytest.mark.django_db

CSV_FORMATS = [key for key in EXPORT_FORMATS if key.endswith(".csv")]
# The repro of the issue: a response with a \r and no comma, quote or \n.
REPRO = b'item_id,prompt,response\ncr1,p,"x\r=1+1"\ncr2,p,"\r=SUM(1+1)"\n'
# Text a person can type that a careless writer splits or leaves executable.
HOSTILE = [
    "x\r=1+1",
    "\r=SUM(1+1)",
    "a\nb",
    "c\r\nd",
    'say "hi", then',
    "=1+1",
    "+cmd",
    "-- note",
    "@at",
    "'=already quoted",
    "''-2",
    "\t=tab",
    "plain",
]


def _export(client: Client, batch: Batch, fmt: str) -> str:
    response = client.get(reverse("report_export", args=[batch.pk, fmt]))
    assert response.status_code == 200, fmt
    return b"".join(response.streaming_content if response.streaming else [response.content]).decode()


def _command(batch: Batch, table: str, tmp_path) -> str:
    out = tmp_path / f"{table}.csv"
    call_command("export_report", batch.name, "--format", "csv", "--table", table, "--out", str(out))
    return out.read_bytes().decode()


def _rows_csv(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


def _rows_pandas(text: str) -> list[list[str]]:
    frame = pd.read_csv(io.StringIO(text, newline=""), dtype=str, keep_default_na=False)
    return [list(frame.columns), *frame.to_numpy().tolist()]


def _researcher() -> Client:
    client = Client()
    client.force_login(make_user("reader", role="researcher"))
    return client


def _rate(batch: Batch, comments=("",)) -> None:
    raters = [make_user(f"{batch.name}-r{i}") for i in range(3)]
    for n, item in enumerate(batch.items.order_by("position")):
        for i, rater in enumerate(raters):
            make_annotation(
                item,
                rater,
                {
                    "coherence": 1 + i,
                    "relevance": 5 - i,
                    "instruction_following": 3,
                    "safety_compliance": 4,
                    "fluency": 2 + (n % 3),
                },
                comment=comments[(n + i) % len(comments)],
                submitted_at=timezone.now(),
            )


def test_a_bare_carriage_return_cannot_split_a_row_or_smuggle_a_formula(tmp_path):
    source = tmp_path / "cr.csv"
    source.write_bytes(REPRO)
    call_command("import_batch", str(source), "--name", "cr")
    batch = Batch.objects.get(name="cr")
    assert dict(batch.items.values_list("item_id", "response")) == {"cr1": "x\r=1+1", "cr2": "\r=SUM(1+1)"}
    _rate(batch)
    for text in (_export(_researcher(), batch, "annotations.csv"), _command(batch, "annotations", tmp_path)):
        for rows in (_rows_csv(text), _rows_pandas(text)):
            assert len(rows) == 1 + 6  # the header and one row per annotation, none split
            assert all(len(row) == len(rows[0]) for row in rows)
            assert {row[0] for row in rows[1:]} == {"cr1", "cr2"}
            responses = {row[0]: row[3] for row in rows[1:]}
            assert responses == {"cr1": "x\r=1+1", "cr2": "'\r=SUM(1+1)"}  # whole cells, the formula defused
            assert not [
                c for row in rows for c in row if c.startswith(DANGEROUS_START) and not PLAIN_NUMBER.match(c)
            ]


def test_the_repro_export_imports_back_unchanged(tmp_path):
    source = tmp_path / "cr.csv"
    source.write_bytes(REPRO)
    call_command("import_batch", str(source), "--name", "cr")
    batch = Batch.objects.get(name="cr")
    _rate(batch, comments=("=1+1", "fine"))
    exported = tmp_path / "annotations.csv"
    exported.write_text(_command(batch, "annotations", tmp_path), encoding="utf-8", newline="")
    call_command("import_annotations", str(exported), "--batch", "cr again")
    _assert_same_batch(batch, Batch.objects.get(name="cr again"))


def _assert_same_batch(original: Batch, copy: Batch) -> None:
    def items(batch):
        return sorted(batch.items.values_list("item_id", "system_id", "prompt", "response"))

    def annotations(batch):
        return sorted(
            (
                a.item.item_id,
                a.annotator.username,
                a.comment,
                tuple(sorted(a.flags)),
                tuple(sorted(a.scores.values_list("dimension", "value"))),
            )
            for a in Annotation.objects.filter(item__batch=batch).select_related("item", "annotator")
        )

    assert items(copy) == items(original)
    assert annotations(copy) == annotations(original)
    assert len(annotations(copy)) == Annotation.objects.filter(item__batch=original).count()


def test_item_ids_text_and_comments_starting_like_formulas_survive_export_and_import(tmp_path):
    batch = make_batch("formulas", n_items=len(HOSTILE), systems=("-base", "@tuned"))
    for n, item in enumerate(batch.items.order_by("position")):
        Item.objects.filter(pk=item.pk).update(
            item_id=f"{HOSTILE[n].strip()[:20] or 'blank'}#{n}",
            prompt=HOSTILE[n],
            response=HOSTILE[-1 - n],
        )
    _rate(batch, comments=HOSTILE)
    exported = tmp_path / "annotations.csv"
    exported.write_text(_export(_researcher(), batch, "annotations.csv"), encoding="utf-8", newline="")
    call_command("import_annotations", str(exported), "--batch", "formulas again")
    copy = Batch.objects.get(name="formulas again")
    assert set(copy.items.values_list("item_id", flat=True)) == set(
        batch.items.values_list("item_id", flat=True)
    )
    assert "=1+1#5" in set(copy.items.values_list("item_id", flat=True))
    _assert_same_batch(batch, copy)


@pytest.fixture
def hostile_batch():
    batch = make_batch("hostile", n_items=6, k=3, systems=("-base", "tuned"))
    for n, item in enumerate(batch.items.order_by("position")):
        Item.objects.filter(pk=item.pk).update(prompt=HOSTILE[n], response=HOSTILE[-1 - n], item_id=f"=id{n}")
    _rate(batch, comments=HOSTILE)
    judge = Judge.objects.create(name="=judge\rx", model="@model")
    JudgeScore.objects.bulk_create(
        JudgeScore(
            judge=judge,
            item=item,
            dimension="coherence",
            raw_value=(n % 5) / 4,
            scale_min=0,
            scale_max=1,
            value=1 + n % 5,
            reason="r\rx",
            raw_output="=raw",
            imported_at=timezone.now(),
        )
        for n, item in enumerate(batch.items.order_by("position"))
    )
    first, second = batch.items.order_by("position")[:2]
    PairwiseVerdict.objects.create(
        judge=judge, baseline=first, enhanced=second, winner="tie", reason="=1+1\r@x"
    )
    return batch


EXPECTED_ROWS = {  # data rows of each CSV export of hostile_batch
    "dimensions.csv": 5,  # one per rubric dimension
    "items.csv": 6,  # one per item
    "scores.csv": 6 * 3 * 5,  # items × annotators × dimensions
    "annotations.csv": 6 * 3,  # items × annotators
    "judges.csv": 1,  # one judge × one dimension scored
    "judge_scores.csv": 6,  # one per judge score
    "pairwise_verdicts.csv": 1,  # one per verdict
    "comparisons.csv": 6,  # one pair of systems × (5 dimensions + overall HCS)
}


def test_the_table_of_expected_rows_covers_every_csv_export():
    assert set(EXPECTED_ROWS) == set(CSV_FORMATS)


@pytest.mark.parametrize("fmt", CSV_FORMATS)
def test_every_csv_export_reads_as_the_same_rows_with_csv_and_pandas(hostile_batch, fmt, tmp_path):
    page = _export(_researcher(), hostile_batch, fmt)
    command = _command(hostile_batch, fmt.removesuffix(".csv"), tmp_path)
    for text in (page, command):
        by_csv, by_pandas = _rows_csv(text), _rows_pandas(text)
        assert by_csv == by_pandas
        assert len(by_csv) == 1 + EXPECTED_ROWS[fmt]
        assert all(len(row) == len(by_csv[0]) for row in by_csv)
        dangerous = [
            c for row in by_csv for c in row if c.startswith(DANGEROUS_START) and not PLAIN_NUMBER.match(c)
        ]
        assert not dangerous, f"{fmt}: formula-like cells {dangerous[:5]}"
    if fmt in (
        "scores.csv",
        "annotations.csv",
    ):  # no statistics in them: the page and the command agree exactly
        assert page == command
    if fmt == "scores.csv":
        assert len(by_csv) - 1 == Score.objects.filter(item__batch=hostile_batch).count()


def test_the_csv_reader_takes_off_exactly_the_apostrophe_the_writer_adds():
    from annotator.uploads.files.reading import read_table

    cells = ["'=1+1", "''=2", "'plain", "I'm fine", "'-0.25", "'@x", "''", "=raw"]
    data = ("id,text\n" + "".join(f'{n},"{c}"\n' for n, c in enumerate(cells))).encode()
    table = read_table(data, filename="t.csv")
    assert table.frame["text"].tolist() == ["=1+1", "'=2", "'plain", "I'm fine", "-0.25", "@x", "''", "=raw"]
    # JSON Lines are not written by the CSV writer, so nothing is taken off.
    jsonl = read_table(b'{"id": "1", "text": "\'=1+1"}\n', filename="t.jsonl")
    assert jsonl.frame["text"].tolist() == ["'=1+1"]
