"""Shared pieces of the fuzz tests (tests/annotator/test_fuzz_*.py): file strategies, the example
budget, a per-example savepoint, row counts, and the tally of cases run.

``FUZZ_EXAMPLES`` (environment) sets examples per test (default 120). The counts of cases that ran
are printed at the end of the pytest run and written to test-output/fuzz_cases.json.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import os
from collections import Counter
from contextlib import contextmanager

from django.db import transaction
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

CASES: Counter = Counter()  # target -> examples run (including hypothesis' replays and shrinks)

FUZZ = settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "120")),
    deadline=None,
    derandomize=False,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,  # the database fixture; each example runs in a savepoint
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
)

FORMULAS = [
    "=1+1",
    '=HYPERLINK("http://example.com","x")',
    "+SUM(A1:A2)",
    "-2+3",
    "@A1",
    "\t=1",
    "\r=1",
    "=cmd|' /C calc'!A0",
    "＝1+1",
]
NASTY = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "\x00",
    "\ufeff",
    "\u2028",
    "é",
    "😀",
    '"',
    "'",
    ",",
    ";",
    "\n",
    "\r\n",
    "\t",
    "",
    " ",
    "null",
    "NaN",
    "inf",
    "-0",
    "1e309",
    "٣",
    "3.0",
    "[]",
    "{}",
    '[{"role": "user"}]',
    "\\",
    "\x1b[31m",
    "[" * 5000 + "]" * 5000,
    '{"a":' * 5000,
    "-" + "9" * 5000,
]
# Longer than every column limit (200 characters), a long text, and one beyond pandas' and csv's
# default field size limit (131,072 characters).
HUGE_SIZES = [201, 5_000, 140_000]

huge = st.builds(
    lambda ch, n: ch * n, st.sampled_from(["x", "é", ",", '"', "\n", "9"]), st.sampled_from(HUGE_SIZES)
)


def cells(extra=()) -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(FORMULAS + NASTY + list(extra)),
        st.text(max_size=12),
        huge,
    )


ENCODINGS = ["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "latin-1", "cp1252", "shift_jis"]


def encode(text: str, encoding: str) -> bytes:
    return codecs.encode(text, encoding, errors="replace")


def _csv_text(header: list[str], rows: list[list[str]], delimiter: str, writer: bool) -> str:
    if writer:  # well-formed quoting
        out = io.StringIO()
        w = csv.writer(out, delimiter=delimiter, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
        return out.getvalue()
    # Joined by hand: stray quotes, delimiters and newlines inside cells break the shape.
    return "\n".join(delimiter.join(r) for r in [header, *rows]) + "\n"


def _jsonl_text(header: list[str], rows: list[list[str]], garbage: list[str]) -> str:
    lines = []
    for row in rows:
        values = [json.loads(v) if v in ("[]", "{}", "null") else v for v in row]
        lines.append(json.dumps(dict(zip(header, values))))
    return "\n".join(lines + garbage) + "\n"


@st.composite
def upload_files(draw, columns: list[str], cell_extra: dict[str, list[str]] | None = None, required: int = 0):
    """(bytes, filename): random bytes, a plausible file (the first ``required`` columns and some
    of the others, cells mostly from ``cell_extra``, UTF-8), or a CSV / JSONL file of a random
    shape over ``columns`` (plus unknown and repeated ones) in a random encoding."""
    cell_extra = cell_extra or {}
    kind = draw(st.sampled_from(["bytes", "plausible", "plausible", "plausible", "csv", "csv", "jsonl"]))
    filename = draw(
        st.sampled_from(
            ["f.csv", "f.csv", "f.tsv", "f.txt", "F.CSV", "f.jsonl", "f.json", "f", "f.xlsx"]
            if kind != "jsonl"
            else ["f.jsonl", "f.ndjson", "f.json", "f.csv"]
        )
    )
    if kind == "bytes":
        return draw(st.binary(max_size=400)), filename
    if kind == "plausible":
        header = columns[:required] + draw(st.lists(st.sampled_from(columns[required:]), unique=True))
        likely = 0.97
    else:
        header = draw(
            st.lists(
                st.sampled_from(columns + ["", "extra", "Item_ID ", "__row__", "=1+1"]),
                min_size=0,
                max_size=len(columns) + 2,
            )
        )
        if draw(st.booleans()):
            header = columns + header  # usually every expected column, sometimes repeated ones
        likely = 0.5
    n_rows = draw(st.integers(1 if kind == "plausible" else 0, 5))
    rows = []
    for _ in range(n_rows):
        width = len(header) + (0 if kind == "plausible" else draw(st.sampled_from([0, 0, 0, -1, 1])))
        row = []
        for c in (header + ["extra"])[: max(width, 0)]:
            if c in cell_extra and draw(st.floats(0, 1)) < likely:
                row.append(draw(st.sampled_from(cell_extra[c])))
            else:
                row.append(draw(cells()))
        rows.append(row)
    if kind == "jsonl" or (kind == "plausible" and filename.endswith((".jsonl", ".json"))):
        garbage = (
            []
            if kind == "plausible"
            else draw(st.lists(st.sampled_from(["", "[1]", "{", "1", '{"a": {"b": 1}}', "\x00"]), max_size=2))
        )
        text = _jsonl_text(header, rows, garbage)
    else:
        plain = kind == "plausible"
        text = _csv_text(
            header,
            rows,
            "," if plain else draw(st.sampled_from([",", ";", "\t", "|"])),
            True if plain else draw(st.booleans()),
        )
    encoding = draw(st.sampled_from(["utf-8", "utf-8-sig"] if kind == "plausible" else ENCODINGS))
    return encode(text, encoding), filename


@contextmanager
def rolled_back():
    """Run one example in a savepoint that is always rolled back: examples do not see each other."""
    with transaction.atomic():
        yield
        transaction.set_rollback(True)


def row_counts(*models) -> dict[str, int]:
    return {m.__name__: m.objects.count() for m in models}


def record(target: str) -> None:
    CASES[target] += 1


def write_summary(path) -> str:
    lines = [f"{target}: {n} cases" for target, n in sorted(CASES.items())]
    if CASES:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(dict(sorted(CASES.items())), indent=2) + "\n")
    return "\n".join(lines)
