"""The one CSV writer every export uses: line breaks are always quoted, formulas are defused.

Line breaks: any cell holding a carriage return or a line feed, alone or as a pair, is written
inside quotes. The dialect ends records with ``\\r\\n`` (RFC 4180), and Python's ``csv`` quotes
every field that contains a character of the line terminator, so a bare ``\\r`` (which
spreadsheets, pandas and ``csv`` all read as the end of a row) can never split a record.

Formulas: a cell that starts with ``=``, ``+``, ``-``, ``@``, a tab, a carriage return or a line
feed could run as a formula when the file is opened in a spreadsheet (CSV injection). Such a
cell gets a leading apostrophe, unless it is a plain number like ``-0.25`` (which must stay a
number for pandas and R). A cell that already starts with apostrophes before such a character
gets one more, so :func:`undefuse` (which the CSV reader applies to every cell,
``annotator.uploads.files.reading``) gives back exactly the text that was written.

>>> defuse("=HYPERLINK(\\"http://x\\")")
'\\'=HYPERLINK("http://x")'
>>> defuse("-0.25"), defuse(-3), defuse("@home"), defuse(None), defuse("plain")
('-0.25', '-3', "'@home", '', 'plain')
>>> undefuse(defuse("-- see notes")), undefuse(defuse("'=quoted")), undefuse("'plain")
('-- see notes', "'=quoted", "'plain")
>>> "".join(csv_lines(["id", "text"], [["cr1", "x\\r=1+1"], ["cr2", "\\r=SUM(1+1)"]]))
'id,text\\r\\ncr1,"x\\r=1+1"\\r\\ncr2,"\\'\\r=SUM(1+1)"\\r\\n'

Long tables are assembled from parts: :meth:`SafeWriter.cells` writes some of a record's cells
exactly as :meth:`SafeWriter.writerow` would, so an export can write the cells shared by many
records once (an annotation's item and annotator, once for its five score rows) and join parts
with :data:`DELIMITER` and :data:`RECORD_END`. Text is handed on in chunks of about
:data:`CHUNK_CHARS` characters, not record by record: a streaming response pays per chunk.

>>> w = SafeWriter(Echo())
>>> w.cells(["=x", None]) + DELIMITER + w.cells([2.5, "a,b"]) + RECORD_END == w.writerow(["=x", None, 2.5, "a,b"])
True
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterable, Iterator
from typing import Any, TextIO

DANGEROUS_START = ("=", "+", "-", "@", "\t", "\r", "\n")
# First characters of the text defuse() may have to change (apostrophes, then a dangerous start).
_MAYBE_DANGEROUS = frozenset(("'", *DANGEROUS_START))
PLAIN_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
# Text that defuse() prefixes, and (with one apostrophe more) what undefuse() takes it off.
NEEDS_APOSTROPHE = re.compile(r"^'*[=+\-@\t\r\n]")
DEFUSED = re.compile(r"^'(?='*[=+\-@\t\r\n])")


class SafeDialect(csv.excel):
    """Comma-separated, double quotes, ``\\r\\n`` records: a cell holding ``\\r`` or ``\\n`` is always quoted."""

    lineterminator = "\r\n"
    quoting = csv.QUOTE_MINIMAL


DELIMITER = SafeDialect.delimiter
RECORD_END = SafeDialect.lineterminator
CHUNK_CHARS = 64 * 1024


def defuse(value: Any) -> str:
    """The text of one CSV cell, with formula-like text neutralised."""
    if type(value) is not str:
        if value is None:
            return ""
        if isinstance(value, bool):
            return "1" if value else "0"
        if isinstance(value, float):
            return "" if not math.isfinite(value) else repr(value)
        if isinstance(value, int):
            return str(value)
        value = str(value)
    # The first character decides for most text, without a regular expression.
    if value[:1] in _MAYBE_DANGEROUS and NEEDS_APOSTROPHE.match(value) and not PLAIN_NUMBER.match(value):
        return "'" + value
    return value


def defuse_all(cells: Iterable[Any]) -> list[str]:
    """``[defuse(cell) for cell in cells]``; text that cannot need an apostrophe (most cells) is
    passed on as it is, without a call."""
    return [c if type(c) is str and c[:1] not in _MAYBE_DANGEROUS else defuse(c) for c in cells]


def undefuse(text: str) -> str:
    """Undo :func:`defuse` for a cell read back in: one apostrophe before a dangerous start comes off."""
    return DEFUSED.sub("", text, count=1)


class SafeWriter:
    """``csv.writer`` with :class:`SafeDialect` whose every cell goes through :func:`defuse`."""

    def __init__(self, stream: TextIO):
        self._writer = csv.writer(stream, dialect=SafeDialect)
        self._cells = csv.writer(Echo(), dialect=SafeDialect)

    def writerow(self, row: Iterable[Any]) -> Any:
        return self._writer.writerow(defuse_all(row))

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        for row in rows:
            self.writerow(row)

    def cells(self, cells: Iterable[Any]) -> str:
        """Some of a record's cells (at least one), defused and quoted as :meth:`writerow` writes
        them, joined by :data:`DELIMITER`, without the record's end."""
        # One empty cell more: the writer quotes a record of one empty cell (""), never a part of one.
        return self._cells.writerow([*defuse_all(cells), ""])[:_CELLS_END]


_CELLS_END = -len(DELIMITER + RECORD_END)


class Echo:
    """A stream whose ``write`` hands back what it is given: a writer's ``writerow`` returns the record."""

    def write(self, value: str) -> str:
        return value


def chunks(header: str, records: Iterable[str]) -> Iterator[str]:
    """``header``, then ``records`` joined into chunks of about :data:`CHUNK_CHARS` characters
    (fewer, larger writes for a streaming response; memory stays one chunk)."""
    pending, size = [header], len(header)
    for record in records:
        pending.append(record)
        size += len(record)
        if size >= CHUNK_CHARS:
            yield "".join(pending)
            pending, size = [], 0
    if pending:
        yield "".join(pending)


def csv_lines(header: Iterable[Any], rows: Iterable[Iterable[Any]]) -> Iterator[str]:
    """Yield the CSV text in chunks of whole records (for streaming responses and files)."""
    writer = SafeWriter(Echo())  # type: ignore[arg-type]
    return chunks(writer.writerow(header), map(writer.writerow, rows))
