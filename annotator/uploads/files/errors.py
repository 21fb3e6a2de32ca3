"""Errors a person can act on: which row, which column, what is wrong."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class RowError:
    """One problem in an uploaded file.

    ``row`` is the spreadsheet row for CSV (the header is row 1, the first data row is row 2) or
    the line number for JSONL; ``None`` for a problem with the file as a whole or its header.
    """

    row: int | None
    column: str | None
    message: str
    unit: str = "row"  # "row" for CSV, "line" for JSONL

    def __str__(self) -> str:
        parts = []
        if self.row is not None:
            parts.append(f"{self.unit} {self.row}")
        if self.column:
            word = "key" if self.unit == "line" else "column"
            parts.append(f"{word} `{self.column}`")
        where = ", ".join(parts)
        return f"{where}: {self.message}" if where else self.message

    @property
    def sort_key(self) -> tuple[int, str]:
        return (-1 if self.row is None else self.row, self.column or "")


class FileRefused(ValueError):
    """The file as a whole cannot be read: too large, not UTF-8, empty, not CSV or JSONL."""


class ImportRefused(ValueError):
    """Nothing was saved; ``errors`` says why, row by row."""

    def __init__(self, errors: list[RowError] | list[str]):
        self.errors = [e if isinstance(e, RowError) else RowError(None, None, e) for e in errors]
        # One sentence: each message's own full stop would read ".;" between them.
        first = "; ".join(str(e).rstrip(". ") for e in self.errors[:3])
        more = f" (and {len(self.errors) - 3} more)" if len(self.errors) > 3 else ""
        super().__init__(f"{first}{more}.")
