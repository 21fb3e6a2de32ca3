"""Scores packed into integers, so a query returns one row per annotation, not one per score.

A dimension's score is stored as the digit ``value - scale_min + 1`` (0 = not rated) in base
``scale_max - scale_min + 2``; as many dimensions share a column as fit in 31 bits (the largest
multiplier times the largest digit stays below 2**31, a 32-bit SQL integer).

>>> p = Packing(("a", "b", "c"), 1, 5)
>>> p.base, p.groups
(6, [('a', 'b', 'c')])
>>> p.unpack([4 + 0 * 6 + 5 * 36])  # a = 4, b not rated, c = 5
(4, None, 5)
>>> p.unpack([None])  # no scores at all
(None, None, None)
>>> [len(g) for g in Packing(tuple(f"d{n}" for n in range(12)), 1, 5).groups]
[11, 1]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from django.db.models import Case, F, IntegerField, Value, When

_PACK_BITS = 31


@dataclass(frozen=True)
class Packing:
    dims: tuple[str, ...]
    scale_min: int
    scale_max: int
    base: int = field(init=False)
    groups: list[tuple[str, ...]] = field(init=False)  # the dimensions of each packed column

    def __post_init__(self) -> None:
        base = self.scale_max - self.scale_min + 2
        per_column = max(1, int(_PACK_BITS / math.log2(base)))
        object.__setattr__(self, "base", base)
        object.__setattr__(
            self, "groups", [self.dims[g : g + per_column] for g in range(0, len(self.dims), per_column)]
        )

    def digits(self, group: tuple[str, ...], *, dimension: str, value: str) -> Case:
        """Per score row: its digit at its dimension's place in ``group``'s column (0 for other
        dimensions); summed over an annotation's score rows, the packed column. ``dimension`` and
        ``value`` name the score's fields from the query's model."""
        digit = F(value) - (self.scale_min - 1)
        return Case(
            *(When(**{dimension: d}, then=digit * self.base**j) for j, d in enumerate(group)),
            default=Value(0),
            output_field=IntegerField(),
        )

    def unpack(self, packed: Sequence[int | None]) -> tuple[int | None, ...]:
        """One annotation's packed columns (None: no score rows) → its scores in ``dims`` order (None: not rated)."""
        scores: list[int | None] = []
        offset = self.scale_min - 1
        for column, group in zip(packed, self.groups, strict=True):
            column = column or 0
            for _ in group:
                column, digit = divmod(column, self.base)
                scores.append(digit + offset if digit else None)
        return tuple(scores)
