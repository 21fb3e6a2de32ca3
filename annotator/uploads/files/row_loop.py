"""The skeleton every import parser shares: check the columns, loop the rows, collect row-numbered errors.

A parser reads its ``Table`` (``annotator.uploads.files.reading``) into a ``RowLoop``, states the columns it
needs as ``Needs``, then either checks whole columns (``text`` and ``flag``) or calls ``each`` with a
function that checks one row. Errors keep the file's row (CSV) or line (JSONL) numbers throughout.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from annotator.uploads.files.errors import RowError
from annotator.uploads.files.reading import ROW, Table

T = TypeVar("T")


@dataclass(frozen=True)
class Need:
    """A header rule: the file has every column of at least one of ``groups``, else ``message`` is
    reported on ``column`` (a file-level error, no row)."""

    groups: tuple[tuple[str, ...], ...]
    column: str | None
    message: str

    @classmethod
    def one(cls, name: str, message: str) -> Need:
        return cls(((name,),), name, message)

    @classmethod
    def any_of(cls, names: Iterable[str], message: str, column: str | None = None) -> Need:
        names = tuple(names)
        return cls(tuple((name,) for name in names), column or names[0], message)


class RowLoop:
    """One parse of one table: its errors so far (the reader's first) and the helpers to add more."""

    def __init__(self, table: Table):
        self.table = table
        self.frame = table.frame
        self.columns = table.columns
        self.unit = table.unit
        self.errors: list[RowError] = list(table.errors)
        self._present = set(table.columns)

    def __len__(self) -> int:
        return len(self.frame)

    def has(self, name: str) -> bool:
        return name in self._present

    def need(self, *needs: Need) -> list[str]:
        """Report each unmet ``Need``; returns the columns reported (empty when the header is complete)."""
        missing = []
        for need in needs:
            if not any(self._present.issuperset(group) for group in need.groups):
                self.errors.append(self.table.error(None, need.column, need.message))
                missing.append(need.column)
        return missing

    @property
    def header_refused(self) -> bool:
        """Whether an error so far concerns the file as a whole or its header row."""
        return any(e.row is None or e.row == 1 for e in self.errors)

    @property
    def rows(self) -> list[int]:
        """The file row (or line) of each record, in order."""
        return self.frame[ROW]

    def text(self, name: str) -> list[str]:
        """The cells of column ``name``; blank cells for a column the file does not have."""
        return self.frame[name] if name in self.frame else [""] * len(self.frame)

    def error(self, row: int | None, column: str | None, message: str) -> RowError:
        return self.table.error(row, column, message)

    def add(self, row: int | None, column: str | None, message: str) -> None:
        self.errors.append(self.table.error(row, column, message))

    def flag(self, indices: Iterable[int], column: str, message: str) -> None:
        """One error on ``column`` for each record at ``indices`` (positions, not file rows)."""
        rows = self.rows
        self.errors.extend(self.table.error(rows[i], column, message) for i in indices)

    def each(self, check: Callable[[int, int, list[RowError]], T]) -> list[T]:
        """Call ``check(index, row, problems)`` per record; a record whose check added problems is
        reported and dropped, the others' results are kept in order."""
        kept: list[T] = []
        for index, row in enumerate(self.rows):
            problems: list[RowError] = []
            value = check(index, row, problems)
            if problems:
                self.errors.extend(problems)
            else:
                kept.append(value)
        return kept

    def sort_by_row_then_file_column(self) -> list[RowError]:
        """The errors in place, by row and then by the column's place in the file (file-level first)."""
        order = {name: i for i, name in enumerate(self.columns)}
        self.errors.sort(key=lambda e: (e.sort_key[0], order.get(e.column, -1)))
        return self.errors

    def sorted_by_row_then_column_name(self) -> list[RowError]:
        """A copy of the errors, by row and then by column name (file-level first)."""
        return sorted(self.errors, key=lambda e: e.sort_key)
