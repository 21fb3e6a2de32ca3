"""The bulk-account file: CSV with the columns ``username,email``, checked row by row.

Nothing is written here; ``annotators_add`` makes the accounts from the checked rows.
"""

from __future__ import annotations

import csv
import io

from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.core.validators import validate_email

COLUMNS = ("username", "email")
MAX_ROWS = 5000
MAX_BYTES = 2 * 1024 * 1024


class AnnotatorListError(ValueError):
    def __init__(self, errors: list[str]):
        super().__init__("; ".join(errors))
        self.errors = errors


def _check_row(number: int, username: str, email: str) -> list[str]:
    errors = []
    if not username:
        errors.append(f"row {number}, column `username`: is empty")
    elif len(username) > 150:
        errors.append(f"row {number}, column `username`: longer than 150 characters")
    else:
        try:
            UnicodeUsernameValidator()(username)
        except ValidationError:
            errors.append(f"row {number}, column `username`: use letters, digits and @/./+/-/_ only")
    if email:
        try:
            validate_email(email)
        except ValidationError:
            errors.append(f"row {number}, column `email`: {email!r} is not an email address")
    return errors


def parse_annotator_list(data: bytes) -> list[tuple[str, str]]:
    """(username, email) pairs; raises AnnotatorListError with every problem by row (header = row 1)."""
    if len(data) > MAX_BYTES:
        raise AnnotatorListError([f"the file is larger than {MAX_BYTES // 1024 // 1024} MB"])
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise AnnotatorListError(["the file is not UTF-8 text"]) from None
    if "\x00" in text:
        raise AnnotatorListError(["the file contains NUL characters; is it a spreadsheet saved as CSV?"])
    reader = csv.DictReader(io.StringIO(text))
    header = [h.strip().lower() for h in (reader.fieldnames or [])]
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise AnnotatorListError(
            [f"row 1: missing column(s) {', '.join(missing)}; the header must be `username,email`"]
        )
    reader.fieldnames = header
    rows, errors, seen = [], [], {}
    for number, row in enumerate(reader, start=2):
        if number - 1 > MAX_ROWS:
            raise AnnotatorListError([f"more than {MAX_ROWS} rows; split the file"])
        username = (row.get("username") or "").strip()
        email = (row.get("email") or "").strip()
        if not username and not email:
            continue
        errors += _check_row(number, username, email)
        if username.lower() in seen:
            errors.append(
                f"row {number}, column `username`: {username!r} repeats row {seen[username.lower()]}"
            )
        seen.setdefault(username.lower(), number)
        rows.append((username, email))
    if not rows and not errors:
        errors.append("the file lists nobody")
    if errors:
        raise AnnotatorListError(errors)
    return rows
