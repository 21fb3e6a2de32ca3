"""Checks of the settings that come with an import: the batch name and k."""

from __future__ import annotations

from annotator.imports.errors import RowError

MIN_K = 3  # the guideline: each item receives k >= 3 independent annotations
MAX_K = 1000
NAME_MAX_LENGTH = 200


def name_errors(name: str | None) -> list[RowError]:
    clean = (name or "").strip()
    if not clean:
        return [RowError(None, None, "The batch needs a name.")]
    if len(clean) > NAME_MAX_LENGTH:
        return [RowError(None, None, f"The batch name is longer than {NAME_MAX_LENGTH} characters.")]
    return []


def k_errors(k: int | None) -> list[RowError]:
    if k is None or isinstance(k, bool) or not isinstance(k, int):
        return [RowError(None, None, "k (annotations per item) must be a whole number, at least 3.")]
    if k < MIN_K:
        return [
            RowError(
                None,
                None,
                f"k = {k} is too small: each item needs at least {MIN_K} independent annotations "
                "for agreement statistics.",
            )
        ]
    if k > MAX_K:
        return [RowError(None, None, f"k = {k} is too large; at most {MAX_K} annotations per item.")]
    return []
