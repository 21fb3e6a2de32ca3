"""The one CSV helper every export uses: spreadsheet formulas are defused.

A cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return could run
as a formula when the file is opened in a spreadsheet (CSV injection). Such a cell gets a
leading apostrophe, unless it is a plain number like ``-0.25`` (which must stay a number
for pandas and R).

>>> defuse("=HYPERLINK(\\"http://x\\")")
'\\'=HYPERLINK("http://x")'
>>> defuse("-0.25"), defuse(-3), defuse("@home"), defuse(None), defuse("plain")
('-0.25', '-3', "'@home", '', 'plain')
>>> undefuse(defuse("-- see notes")), undefuse("'quoted")
('-- see notes', "'quoted")
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterable
from typing import Any, TextIO

DANGEROUS_START = ("=", "+", "-", "@", "\t", "\r")
PLAIN_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


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
    if text.startswith(DANGEROUS_START) and not PLAIN_NUMBER.match(text):
        return "'" + text
    return text


def undefuse(text: str) -> str:
    """Undo :func:`defuse` for a cell read back in (an apostrophe before a dangerous start)."""
    if len(text) > 1 and text[0] == "'" and text[1:].startswith(DANGEROUS_START):
        return text[1:]
    return text


class SafeWriter:
    """``csv.writer`` whose every cell goes through :func:`defuse`."""

    def __init__(self, stream: TextIO):
        self._writer = csv.writer(stream, lineterminator="\n")

    def writerow(self, row: Iterable[Any]) -> Any:
        return self._writer.writerow([defuse(cell) for cell in row])

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        for row in rows:
            self.writerow(row)


class _Echo:
    def write(self, value: str) -> str:
        return value


def csv_lines(header: Iterable[Any], rows: Iterable[Iterable[Any]]):
    """Yield the CSV text line by line (for streaming responses)."""
    writer = SafeWriter(_Echo())  # type: ignore[arg-type]
    yield writer.writerow(header)
    for row in rows:
        yield writer.writerow(row)
