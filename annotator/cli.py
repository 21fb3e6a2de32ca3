"""What the management commands share (the core ones and each feature's): reading an input file, the rubric
option and printing a refused import; finding a batch by name (or id); the link commands' --base-url / --days
options. Kept out of ``management/commands/`` so that folder holds only commands."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import CommandError

from annotator.counted import counted
from annotator.models import Batch
from annotator.studies.link_urls import command_base
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
            f"{path}: nothing was saved; {counted(len(exc.errors), 'problem', 'problems')}:\n  "
            + "\n  ".join(lines)
        )
    return CommandError(f"{path}: nothing was saved. {exc}")


def batch_named(name: str) -> Batch:
    batch = Batch.objects.filter(name=name).first()
    if batch is None:
        raise _no_batch(name, none="none yet")
    return batch


def batch_named_or_numbered(text: str) -> Batch:
    """The batch named ``text`` or, when none is and ``text`` is a number, the batch of that id."""
    found = Batch.objects.filter(name=text).first()
    if found is None and text.isdigit():
        found = Batch.objects.filter(pk=int(text)).first()
    if found is None:
        raise _no_batch(text, none="none")
    return found


def _no_batch(text: str, *, none: str) -> CommandError:
    """The refusal naming the first 20 batches there are (``none`` when there is none)."""
    known = ", ".join(Batch.objects.order_by("name").values_list("name", flat=True)[:20]) or none
    return CommandError(f"No batch named {text!r}. Batches: {known}.")


def add_link_options(parser, *, days: int) -> None:
    parser.add_argument(
        "--days", type=int, default=days, help=f"days until the link expires (default {days})"
    )
    parser.add_argument(
        "--base-url", default=None, help="the site's address the link starts with (default SITE_URL)"
    )


def link_base(command, options) -> str | None:
    """The address the command's links start with (``command_base``); its note goes to stderr."""
    base, note = command_base(options["base_url"])
    if note:
        command.stderr.write(command.style.WARNING(note))
    return base
