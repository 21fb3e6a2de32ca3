"""A table of named columns held as Python lists, in which the upload parsers hand over their rows.

Not a pandas DataFrame: a web worker that serves an upload then never imports pandas, numpy or
pyarrow, which are slow to import and whose memory the worker would keep.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any


class Column(list):
    """One column's values; ``tolist()`` as on a pandas Series, so callers read either."""

    def tolist(self) -> list:
        return list(self)


class Frame:
    """Columns of equal length, in order. Reading a column gives a ``Column``; ``frame[name] =
    values`` adds or replaces one (a single text value fills every row)."""

    def __init__(self, data: Mapping[str, Iterable[Any]] | None = None, length: int | None = None):
        self._data: dict[str, Column] = {}
        self._length = length
        for name, values in (data or {}).items():
            self[name] = values

    @property
    def columns(self) -> list[str]:
        return list(self._data)

    @property
    def empty(self) -> bool:
        return len(self) == 0

    def __len__(self) -> int:
        if self._length is not None:
            return self._length
        return len(next(iter(self._data.values()))) if self._data else 0

    def __contains__(self, name: str) -> bool:
        return name in self._data

    def __getitem__(self, name: str) -> Column:
        return self._data[name]

    def __setitem__(self, name: str, values: Iterable[Any] | str) -> None:
        if isinstance(values, str):
            values = [values] * len(self)
        column = Column(values)
        if self._data or self._length is not None:
            if len(column) != len(self):
                raise ValueError(f"column {name!r} has {len(column)} values for {len(self)} rows")
        self._data[name] = column
        if self._length is None:
            self._length = len(column)

    def rows(self, indices: Sequence[int]) -> Frame:
        """The rows at ``indices``, in that order."""
        picked = {name: [values[i] for i in indices] for name, values in self._data.items()}
        return Frame(picked, len(indices))

    def head(self, n: int) -> Frame:
        return self.rows(range(min(n, len(self))))

    def to_dict(self, orient: str = "records") -> list[dict[str, Any]]:
        if orient != "records":
            raise ValueError("only records")
        names = list(self._data)
        return (
            [dict(zip(names, values, strict=True)) for values in zip(*self._data.values(), strict=True)]
            if names
            else [{} for _ in range(len(self))]
        )

    def __repr__(self) -> str:
        return f"Frame({len(self)} rows: {', '.join(self._data)})"
