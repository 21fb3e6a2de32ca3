"""What the import commands share: reading the file, the rubric option, printing errors."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import CommandError

from annotator.uploads.files.errors import FileRefused, ImportRefused
from annotator.uploads.files.file_size import check_size
from hcs.rubric import Rubric, RubricError

MAX_ERRORS_PRINTED = 200


def read_file(path: str) -> bytes:
    file = Path(path)
    if not file.is_file():
        raise CommandError(f"{path}: no such file.")
    try:
        check_size(file.stat().st_size)
    except FileRefused as exc:
        raise CommandError(f"{path}: {exc}") from None
    return file.read_bytes()


def read_text(path: str) -> str:
    """A UTF-8 text file (a BOM is dropped), or a CommandError naming what is wrong with it."""
    try:
        text = read_file(path).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise CommandError(f"{path}: not UTF-8 text.") from None
    if "\x00" in text:
        raise CommandError(f"{path}: contains NUL characters.")
    return text


def load_rubric(path: str | None) -> Rubric | None:
    if not path:
        return None
    try:
        return Rubric.load(path)
    except RubricError as exc:
        raise CommandError(f"--rubric: {exc}") from None


def refused(path: str, exc: Exception) -> CommandError:
    if isinstance(exc, ImportRefused):
        lines = [str(e) for e in exc.errors[:MAX_ERRORS_PRINTED]]
        if len(exc.errors) > MAX_ERRORS_PRINTED:
            lines.append(f"... and {len(exc.errors) - MAX_ERRORS_PRINTED} more")
        return CommandError(
            f"{path}: nothing was saved; {len(exc.errors)} problem(s):\n  " + "\n  ".join(lines)
        )
    return CommandError(f"{path}: nothing was saved. {exc}")
