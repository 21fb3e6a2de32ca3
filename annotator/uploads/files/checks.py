"""Checks of the settings that come with an import: the batch name, k and the rubric's scale."""

from __future__ import annotations

import unicodedata
from typing import Any

from annotator.models.annotation import SCORE_MAX, SCORE_MIN
from annotator.models.batch import MIN_K
from annotator.uploads.files.errors import RowError
from annotator.uploads.files.json_text import SURROGATE, has_nul
from hcs.rubric import Rubric, RubricError

__all__ = ["MAX_K", "MIN_K", "NAME_MAX_LENGTH", "k_errors", "name_errors", "rubric_errors"]
MAX_K = 1000
NAME_MAX_LENGTH = 200


def name_errors(name: str | None) -> list[RowError]:
    clean = (name or "").strip()
    if not clean:
        return [RowError(None, None, "The batch needs a name.")]
    if len(clean) > NAME_MAX_LENGTH:
        return [RowError(None, None, f"The batch name is longer than {NAME_MAX_LENGTH} characters.")]
    if any(
        unicodedata.category(c) == "Cc" for c in clean
    ):  # PostgreSQL stores no NUL; none belongs in a name
        return [
            RowError(
                None,
                None,
                "The batch name contains a control character (a NUL byte, tab or line break); use plain text.",
            )
        ]
    if SURROGATE.search(clean):  # e.g. a command-line name that was not UTF-8
        return [
            RowError(
                None,
                None,
                "The batch name contains a lone surrogate (text that is not UTF-8); use plain text.",
            )
        ]
    return []


def rubric_errors(rubric: Rubric) -> list[RowError]:
    """A rubric on a scale other than the stored one is refused, naming both scales.

    ``hcs`` computes on any scale, but this app stores, checks, reports and calibrates scores on
    one: the database check, the report query, the judge calibration (QWK, confusion table) and
    its charts are written for it.
    """
    if (rubric.scale_min, rubric.scale_max) == (SCORE_MIN, SCORE_MAX):
        return []
    return [
        RowError(
            None,
            None,
            (
                f"The rubric \u201c{rubric.title}\u201d rates on a {rubric.scale_min}\u2013{rubric.scale_max} scale; "
                f"this app stores and reports scores on the {SCORE_MIN}\u2013{SCORE_MAX} scale only. Give the rubric a "
                f'{SCORE_MIN}\u2013{SCORE_MAX} scale (levels "{SCORE_MIN}" to "{SCORE_MAX}") and import again.'
            ),
        )
    ]


def k_errors(k: int | None) -> list[RowError]:
    if k is None or isinstance(k, bool) or not isinstance(k, int):
        return [RowError(None, None, f"k (annotations per item) must be a whole number, at least {MIN_K}.")]
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


def rubric_from_data(data: Any) -> Rubric:
    """A rubric from decoded JSON (a file's, or a request's); ``ValueError`` saying what is wrong."""
    if has_nul(data):  # no database text can hold it (PostgreSQL refuses the batch)
        raise ValueError("The rubric contains a NUL character (\\u0000).")
    try:
        return Rubric.from_dict(data)
    except (RubricError, AttributeError, TypeError) as exc:
        raise ValueError(f"The rubric is not a valid rubric: {exc}") from None
    except (ValueError, RecursionError):  # a number too long to convert, or nesting too deep
        raise ValueError(
            "The rubric is not a valid rubric: a value is too deep or a number too long."
        ) from None
