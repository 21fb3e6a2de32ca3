"""From uploaded bytes to a table of text cells with the row number of each record.

CSV: every record keeps its spreadsheet row number (the header is row 1), even when a cell
spans several lines. Regular files go through pandas' C parser; a file with a row of too many
cells (which pandas would reject at the first one, or silently truncate) is read again record by
record with the standard library's ``csv`` reader so that every such row is named. JSONL is one
JSON object per line. Cells are text; blank cells are ``""``.
"""

from __future__ import annotations

import csv
import io
import json
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import PurePath

import numpy as np
import pandas as pd

from annotator.exports.csv_safe import DEFUSED
from annotator.imports.errors import FileRefused, RowError
from annotator.imports.file_size import check_size
from annotator.imports.json_text import has_lone_surrogate, has_nul, json_loads

# pandas' C parser makes every row as wide as the widest: one line of 140,000 commas in a 200-line file
# asked it for gigabytes (found by the fuzz test; the worker was killed for memory). Past this many
# cells (lines x widest line), such a file takes the record-by-record path, which names the wide rows.
MAX_PARSED_CELLS = 10_000_000
ROW = "__row__"  # the DataFrame column holding each record's row (CSV) or line (JSONL) number
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
    frame: pd.DataFrame  # one str column per file column, plus ROW
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
    try:
        header = next(csv.reader(_lines(text), delimiter=delimiter, strict=True))
    except csv.Error as exc:
        raise FileRefused(f"The header row cannot be read as CSV: {exc}.") from None
    del text  # pandas reads the bytes; a second copy of a large file as text is not needed
    return read_csv(data, delimiter, header)


def _lines(text: str) -> Iterator[str]:
    """The lines of ``text`` one at a time, without copying it whole (the csv reader takes any iterable)."""
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


def read_csv(data: bytes, delimiter: str, header: list[str]) -> Table:
    columns = [name.strip().lower() for name in header]
    errors = _header_errors(columns)
    if errors:
        return Table(CSV, pd.DataFrame({ROW: pd.Series([], dtype="int64")}), [c for c in columns if c], errors)
    frame = _read_regular_csv(data, delimiter, columns)
    table = Table(CSV, frame, columns, []) if frame is not None else _read_irregular_csv(
        decode_text(data), delimiter, columns
    )
    if MAYBE_DEFUSED.search(data):
        _undefuse(table.frame, columns)
    return table


def _undefuse(frame: pd.DataFrame, columns: list[str]) -> None:
    """Take off the apostrophe the app's CSV writer puts before formula-like text, so an export
    imports back unchanged (``annotator.exports.csv_safe``); in place."""
    for name in columns:
        starts = frame[name].str.startswith("'")
        if starts.any():
            frame.loc[starts, name] = frame.loc[starts, name].str.replace(DEFUSED, "", n=1, regex=True)


def _header_errors(columns: list[str]) -> list[RowError]:
    errors = []
    seen: dict[str, int] = {}
    for index, name in enumerate(columns, start=1):
        if not name:
            errors.append(RowError(1, None, f"column {index} of the header has no name"))
        elif name == ROW:
            errors.append(RowError(1, name, "is a reserved name; rename the column"))
        elif name in seen:
            errors.append(RowError(1, name, f"appears twice in the header (columns {seen[name]} and {index})"))
        seen.setdefault(name, index)
    return errors


def _read_regular_csv(data: bytes, delimiter: str, columns: list[str]) -> pd.DataFrame | None:
    """The fast path: pandas' C parser, when every row has at most as many cells as the header.

    Returns ``None`` when pandas finds a row it would have to reject or silently truncate; the
    slow path then reports every such row with its number.
    """
    if _too_wide(data, delimiter, len(columns)):
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("error", pd.errors.ParserWarning)
        try:
            frame = pd.read_csv(
                io.BytesIO(data), sep=delimiter, header=0, names=columns, dtype=str, keep_default_na=False,
                na_filter=False, index_col=False, skip_blank_lines=False, engine="c", encoding="utf-8",
            )
        except (pd.errors.ParserError, pd.errors.ParserWarning, ValueError):
            return None
    frame = frame.astype(object) if len(frame) == 0 else frame
    # Record i (0-based) is spreadsheet row i + 2; blank records are dropped after numbering.
    frame[ROW] = np.arange(2, len(frame) + 2, dtype="int64")
    blank = np.ones(len(frame), dtype=bool)
    for name in columns:
        blank &= frame[name].to_numpy() == ""
    if blank.any():
        frame = frame[~blank].reset_index(drop=True)
    return frame


def _too_wide(data: bytes, delimiter: str, width: int) -> bool:
    """Whether some line has more delimiters than the header and lines x that line's cells exceed
    MAX_PARSED_CELLS (an upper bound: quoted delimiters count too, so a false alarm only costs speed)."""
    raw = np.frombuffer(data, dtype=np.uint8)
    delimiters = np.flatnonzero(raw == ord(delimiter))
    if len(delimiters) < width:
        return False
    # pandas ends a line at "\n", "\r\n" or a lone "\r": count "\n" and every "\r" not followed by "\n".
    lone_cr = (raw[:-1] == ord("\r")) & (raw[1:] != ord("\n")) if len(raw) > 1 else np.zeros(0, dtype=bool)
    ends = (raw == ord("\n"))
    ends[:-1] |= lone_cr
    if len(raw) and raw[-1] == ord("\r"):
        ends[-1] = True
    newlines = np.flatnonzero(ends)
    per_line = np.bincount(np.searchsorted(newlines, delimiters), minlength=len(newlines) + 1)
    widest = int(per_line.max()) + 1
    return widest > width and widest * (len(newlines) + 1) > MAX_PARSED_CELLS


def _read_irregular_csv(text: str, delimiter: str, columns: list[str]) -> Table:
    """The slow path, record by record, so that every row with surplus cells is named."""
    reader = csv.reader(_lines(text), delimiter=delimiter, strict=True)
    next(reader)
    errors: list[RowError] = []
    width = len(columns)
    records: list[list[str]] = []
    rows: list[int] = []
    row = 1
    try:
        for record in reader:
            row += 1
            if not any(cell.strip() for cell in record):
                continue  # blank lines, e.g. at the end of a spreadsheet export
            if len(record) > width:
                if any(cell.strip() for cell in record[width:]):
                    errors.append(
                        RowError(row, None, f"has {len(record)} cells but the header has {width} columns")
                    )
                    continue
                record = record[:width]
            elif len(record) < width:
                record = record + [""] * (width - len(record))
            records.append(record)
            rows.append(row)
    except csv.Error as exc:
        errors.append(RowError(row + 1, None, f"cannot be read as CSV ({exc}); the rows after it were not read"))
    cells = list(zip(*records)) if records else [()] * width
    frame = pd.DataFrame({name: np.array(col, dtype=object) for name, col in zip(columns, cells)})
    frame[ROW] = np.array(rows, dtype="int64")
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


LONE_SURROGATE = ("contains a lone surrogate (an escape like \\ud800 without its pair), which is not a character; "
                  "write the character itself or both halves of its pair")


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
    for number, line in enumerate(_lines(text), start=1):
        line = line.strip()
        if not line:
            continue
        try:
            value = json_loads(line)
        except json.JSONDecodeError as exc:
            errors.append(RowError(number, None, f"is not valid JSON ({exc.msg} at character {exc.colno})", "line"))
            continue
        if not isinstance(value, dict):
            errors.append(RowError(number, None, "must be a JSON object like {\"item_id\": ...}", "line"))
            continue
        if "\\u" in line and has_lone_surrogate(value):  # only an escape makes one: the file itself is UTF-8
            errors.extend(
                RowError(number, _escaped(key.strip().lower()), LONE_SURROGATE, "line")
                for key, cell in value.items() if has_lone_surrogate(key) or has_lone_surrogate(cell)
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
                RowError(number, key.strip().lower().replace("\x00", "\\u0000"), "contains a NUL character", "line")
                for key, cell in value.items() if has_nul(key) or has_nul(cell)
            )
            continue
        records.append(record)
        rows.append(number)
    header = [c for c in columns if c != ROW]  # a line naming the reserved key was refused above
    frame = pd.DataFrame.from_records(records, columns=header) if records else pd.DataFrame(columns=header)
    frame = frame.fillna("").astype(object)
    frame[ROW] = pd.Series(rows, dtype="int64")
    if not records and not errors:
        raise FileRefused("The file has no JSON lines.")
    return Table(JSONL, frame, header, errors)
