"""From uploaded bytes to a table of text cells with the row number of each record.

CSV: every record keeps its spreadsheet row number (the header is row 1), even when a cell
spans several lines. Files are read record by record with the standard library's ``csv`` reader,
so every row with too many cells is named. JSONL is one JSON object per line. Cells are text;
blank cells are ``""``. No pandas: see ``annotator.uploads.files.columns``.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import compress
from pathlib import PurePath

from annotator.reports.exports.csv_safe import DEFUSED
from annotator.uploads.files.columns import Frame
from annotator.uploads.files.errors import FileRefused, RowError
from annotator.uploads.files.file_size import check_size
from annotator.uploads.files.json_text import has_lone_surrogate, has_nul, json_loads, json_problem

ROW = "__row__"  # the Frame column holding each record's row (CSV) or line (JSONL) number
CSV, JSONL = "csv", "jsonl"
JSONL_SUFFIXES = {".jsonl", ".ndjson", ".json"}
CSV_SUFFIXES = {".csv", ".tsv", ".txt"}

# A cheap test on the raw bytes: only a file with an apostrophe right before a formula character can
# hold a cell the app's CSV writer defused (``''=x`` holds ``'=`` too).
MAYBE_DEFUSED = re.compile(rb"'[=+\-@\t\r\n]")

csv.field_size_limit(2**31 - 1)


@dataclass
class Table:
    """The cells of a file as text; blank cells are ``""``."""

    format: str
    frame: Frame  # one str column per file column, plus ROW
    columns: list[str]  # file columns in file order, names stripped and lower-cased
    errors: list[RowError] = field(default_factory=list)

    @property
    def unit(self) -> str:
        return "line" if self.format == JSONL else "row"

    def error(self, row: int | None, column: str | None, message: str) -> RowError:
        return RowError(row, column, message, self.unit)


def decode_text(data: bytes) -> str:
    """UTF-8 text, with or without a byte-order mark; anything else is refused with where it broke."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        bad = data[exc.start : exc.start + 1].hex()
        raise FileRefused(
            f"The file is not UTF-8 text: byte 0x{bad} on line {line} cannot be read. "
            "Save it as UTF-8 (in Excel: \u201cCSV UTF-8\u201d) and upload it again."
        ) from None


def detect_format(filename: str, text: str) -> str:
    suffix = PurePath(filename or "").suffix.lower()
    if suffix in JSONL_SUFFIXES:
        return JSONL
    if suffix in CSV_SUFFIXES:
        return CSV
    return JSONL if text.lstrip().startswith("{") else CSV


def read_table(data: bytes, *, filename: str = "") -> Table:
    """Check size and encoding, then read CSV or JSONL (chosen by the file name, else by content)."""
    check_size(len(data))
    text = decode_text(data)
    if not text.strip():
        raise FileRefused("The file is empty.")
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise FileRefused(f"The file contains a NUL character (line {line}); it is not a text file.")
    if detect_format(filename, text) == JSONL:
        return read_jsonl(text)
    delimiter = _delimiter(text[: text.find("\n")] if "\n" in text else text)
    return read_csv(text, delimiter, has_defused=MAYBE_DEFUSED.search(data) is not None)


def _lines(text: str) -> io.StringIO:
    """The lines of ``text`` for the csv reader; ``newline=""`` ends a line at "\n", "\r\n" or a lone
    "\r" outside quotes and keeps line breaks inside quoted cells as they are."""
    return io.StringIO(text, newline="")


def _json_lines(text: str) -> Iterator[str]:
    """The lines of ``text`` (ended by "\n") one at a time, without copying it whole."""
    start, size = 0, len(text)
    while start < size:
        end = text.find("\n", start)
        if end == -1:
            yield text[start:]
            return
        yield text[start : end + 1]
        start = end + 1


def _delimiter(header_line: str) -> str:
    if "," in header_line:
        return ","
    for candidate in (";", "\t"):
        if candidate in header_line:
            return candidate
    return ","


def read_csv(text: str, delimiter: str, *, has_defused: bool = True) -> Table:
    """Read CSV text; ``has_defused`` False skips looking for cells the app's CSV writer defused."""
    reader = csv.reader(_lines(text), delimiter=delimiter, strict=True)
    try:
        header = next(reader)
    except csv.Error as exc:
        raise FileRefused(f"The header row cannot be read as CSV: {exc}.") from None
    columns = [name.strip().lower() for name in header]
    errors = _header_errors(columns)
    if errors:
        return Table(CSV, Frame({ROW: []}), [c for c in columns if c], errors)
    table = _read_records(text, delimiter, columns)
    if has_defused:
        _undefuse(table.frame, columns)
    return table


def _undefuse(frame: Frame, columns: list[str]) -> None:
    """Take off the apostrophe the app's CSV writer puts before formula-like text, so an export
    imports back unchanged (``annotator.reports.exports.csv_safe``); in place."""
    for name in columns:
        values = frame[name]
        for i, cell in enumerate(values):
            if cell.startswith("'"):
                values[i] = DEFUSED.sub("", cell, count=1)


def _header_errors(columns: list[str]) -> list[RowError]:
    errors = []
    seen: dict[str, int] = {}
    for index, name in enumerate(columns, start=1):
        if not name:
            errors.append(RowError(1, None, f"column {index} of the header has no name"))
        elif name == ROW:
            errors.append(RowError(1, name, "is a reserved name; rename the column"))
        elif name in seen:
            errors.append(
                RowError(1, name, f"appears twice in the header (columns {seen[name]} and {index})")
            )
        seen.setdefault(name, index)
    return errors


def _read_records(text: str, delimiter: str, columns: list[str]) -> Table:
    """The records after the header, each as wide as the header; every row with surplus cells is named.

    A file whose records all have the header's width is read in one go (the usual case); any other
    record by record."""
    width = len(columns)
    reader = csv.reader(_lines(text), delimiter=delimiter, strict=True)
    next(reader)
    try:
        records = list(reader)
    except csv.Error:
        records = None
    if records is None or any(len(record) != width for record in records):
        return _read_irregular_records(text, delimiter, columns)
    keep = list(map(any, records))  # a row of empty cells (",,,") is blank
    rows: Iterable[int] = range(2, len(records) + 2)
    if not all(keep):
        records, rows = list(compress(records, keep)), list(compress(rows, keep))
    cells = list(zip(*records)) if records else [()] * width
    frame = Frame(dict(zip(columns, cells)), len(records))
    frame[ROW] = rows
    return Table(CSV, frame, columns, [])


def _read_irregular_records(text: str, delimiter: str, columns: list[str]) -> Table:
    errors: list[RowError] = []
    width = len(columns)
    reader = csv.reader(_lines(text), delimiter=delimiter, strict=True)
    next(reader)
    records: list[list[str]] = []
    rows: list[int] = []
    row = 1
    try:
        for row, record in enumerate(reader, start=2):  # noqa: B007 (row names the record that fails)
            if not any(cell.strip() for cell in record) if len(record) != width else not any(record):
                continue  # blank lines, e.g. at the end of a spreadsheet export, and rows of empty cells
            if len(record) > width:
                if any(cell.strip() for cell in record[width:]):
                    message = f"has {len(record)} cells but the header has {width} columns"
                    errors.append(RowError(row, None, message))
                    continue
                record = record[:width]
            elif len(record) < width:
                record = record + [""] * (width - len(record))
            records.append(record)
            rows.append(row)
    except csv.Error as exc:
        errors.append(
            RowError(row + 1, None, f"cannot be read as CSV ({exc}); the rows after it were not read")
        )
    cells = list(zip(*records)) if records else [()] * width
    frame = Frame(dict(zip(columns, cells)), len(rows))
    frame[ROW] = rows
    return Table(CSV, frame, columns, errors)


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


LONE_SURROGATE = (
    "contains a lone surrogate (an escape like \\ud800 without its pair), which is not a character; "
    "write the character itself or both halves of its pair"
)


def _escaped(text: str) -> str:
    """``text`` with any lone surrogate written as its escape, so an error message can show it."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def read_jsonl(text: str) -> Table:
    errors: list[RowError] = []
    records: list[dict[str, str]] = []
    rows: list[int] = []
    names: dict[str, str] = {}  # key as written -> column name
    columns: dict[str, None] = {}  # column names in order of first appearance
    lists: dict[tuple[str, ...], str] = {}
    for number, line in enumerate(_json_lines(text), start=1):
        line = line.strip()
        if not line:
            continue
        try:
            value = json_loads(line)
        except json.JSONDecodeError as exc:
            errors.append(RowError(number, None, f"is not valid JSON ({json_problem(exc)})", "line"))
            continue
        if not isinstance(value, dict):
            errors.append(RowError(number, None, 'must be a JSON object like {"item_id": ...}', "line"))
            continue
        if "\\u" in line and has_lone_surrogate(value):  # only an escape makes one: the file itself is UTF-8
            errors.extend(
                RowError(number, _escaped(key.strip().lower()), LONE_SURROGATE, "line")
                for key, cell in value.items()
                if has_lone_surrogate(key) or has_lone_surrogate(cell)
            )
            continue
        record = {}
        for key, cell in value.items():
            name = names.get(key)
            if name is None:
                name = names[key] = key.strip().lower()
                columns.setdefault(name, None)
            if type(cell) is str:
                record[name] = cell
            elif type(cell) is list and all(type(x) is str for x in cell):
                key = tuple(cell)  # lists of constraints repeat across the systems of a prompt
                text_list = lists.get(key)
                record[name] = text_list if text_list is not None else lists.setdefault(key, _cell(cell))
            else:
                record[name] = _cell(cell)
        if len(record) < len(value):
            errors.append(RowError(number, None, "has the same key twice (keys ignore case)", "line"))
            continue
        if ROW in record:
            errors.append(RowError(number, ROW, "is a reserved name; rename the key", "line"))
            continue
        if "\\u0000" in line and has_nul(value):  # no database text can hold the NUL that \u0000 makes
            errors.extend(
                RowError(
                    number, key.strip().lower().replace("\x00", "\\u0000"), "contains a NUL character", "line"
                )
                for key, cell in value.items()
                if has_nul(key) or has_nul(cell)
            )
            continue
        records.append(record)
        rows.append(number)
    header = [c for c in columns if c != ROW]  # a line naming the reserved key was refused above
    frame = Frame({name: [record.get(name, "") for record in records] for name in header}, len(rows))
    frame[ROW] = rows
    if not records and not errors:
        raise FileRefused("The file has no JSON lines.")
    return Table(JSONL, frame, header, errors)
