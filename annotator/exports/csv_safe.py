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
``annotator.imports.reading``) gives back exactly the text that was written.

>>> defuse("=HYPERLINK(\\"http://x\\")")
'\\'=HYPERLINK("http://x")'
>>> defuse("-0.25"), defuse(-3), defuse("@home"), defuse(None), defuse("plain")
('-0.25', '-3', "'@home", '', 'plain')
>>> undefuse(defuse("-- see notes")), undefuse(defuse("'=quoted")), undefuse("'plain")
('-- see notes', "'=quoted", "'plain")
>>> "".join(csv_lines(["id", "text"], [["cr1", "x\\r=1+1"], ["cr2", "\\r=SUM(1+1)"]]))
'id,text\\r\\ncr1,"x\\r=1+1"\\r\\ncr2,"\\'\\r=SUM(1+1)"\\r\\n'
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterable, Iterator
from typing import Any, TextIO

DANGEROUS_START = ("=", "+", "-", "@", "\t", "\r", "\n")
PLAIN_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
# Text that defuse() prefixes, and (with one apostrophe more) what undefuse() takes it off.
NEEDS_APOSTROPHE = re.compile(r"^'*[=+\-@\t\r\n]")
DEFUSED = re.compile(r"^'(?='*[=+\-@\t\r\n])")


class SafeDialect(csv.excel):
    """Comma-separated, double quotes, ``\\r\\n`` records: a cell holding ``\\r`` or ``\\n`` is always quoted."""

    lineterminator = "\r\n"
    quoting = csv.QUOTE_MINIMAL


def defuse(value: Any) -> str:
    """The text of one CSV cell, with formula-like text neutralised."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return "" if not math.isfinite(value) else repr(value)
    if isinstance(value, int):
        return str(value)
    text = str(value)
    if NEEDS_APOSTROPHE.match(text) and not PLAIN_NUMBER.match(text):
        return "'" + text
    return text


def undefuse(text: str) -> str:
    """Undo :func:`defuse` for a cell read back in: one apostrophe before a dangerous start comes off."""
    return DEFUSED.sub("", text, count=1)


class SafeWriter:
    """``csv.writer`` with :class:`SafeDialect` whose every cell goes through :func:`defuse`."""

    def __init__(self, stream: TextIO):
        self._writer = csv.writer(stream, dialect=SafeDialect)

    def writerow(self, row: Iterable[Any]) -> Any:
        return self._writer.writerow([defuse(cell) for cell in row])

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        for row in rows:
            self.writerow(row)


class _Echo:
    def write(self, value: str) -> str:
        return value


def csv_lines(header: Iterable[Any], rows: Iterable[Iterable[Any]]) -> Iterator[str]:
    """Yield the CSV text record by record (for streaming responses and files)."""
    writer = SafeWriter(_Echo())  # type: ignore[arg-type]
    yield writer.writerow(header)
    for row in rows:
        yield writer.writerow(row)
