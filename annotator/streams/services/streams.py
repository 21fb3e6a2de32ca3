"""Making a stream: its settings checked, its salt drawn, and the batch its sampled traces join."""

from __future__ import annotations

import math
import re

from django.db import IntegrityError, transaction

from annotator.models import Stream
from annotator.models.batch import MIN_K
from annotator.streams.sampling import new_salt
from annotator.uploads.files.errors import ImportRefused
from annotator.uploads.services.batches import batch_create
from hcs.rubric import Rubric

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}\Z")
WINDOWS = ("day", "week")
BATCH_PREFIX = "stream: "


class StreamRefused(ValueError):
    """The settings of a stream, or a request about one, cannot be taken; ``problems`` says why."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("; ".join(problems))


def stream_settings_problems(*, name: str, human_rate, k, window, judges) -> list[str]:
    problems = []
    if not isinstance(name, str) or not NAME.match(name):
        problems.append(
            "name: 1 to 100 characters, letters, digits, '.', '_' or '-', starting with a letter or digit"
        )
    elif Stream.objects.filter(name=name).exists():
        problems.append(f"name: a stream named \u201c{name}\u201d already exists")
    if (
        isinstance(human_rate, bool)
        or not isinstance(human_rate, int | float)
        or not math.isfinite(human_rate)
    ):
        problems.append("human_rate: a number from 0 to 1")
    elif not 0 <= human_rate <= 1:
        problems.append(f"human_rate: {human_rate} is not between 0 and 1")
    if isinstance(k, bool) or not isinstance(k, int) or k < MIN_K:
        problems.append(f"k: a whole number of at least {MIN_K} (independent human ratings per trace)")
    if not isinstance(window, str | int) or isinstance(window, bool):
        problems.append("window: 'day', 'week' or a whole number of human-labelled traces")
    else:
        text = str(window)
        if text not in WINDOWS and not (text.isdigit() and int(text) >= 2):
            problems.append(f"window: {window!r} is not 'day', 'week' or a whole number of at least 2")
    if not isinstance(judges, list) or not all(isinstance(j, str) and j.strip() for j in judges):
        problems.append("judges: a list of judge names")
    elif len({j.strip() for j in judges}) != len(judges):
        problems.append("judges: a name is given twice")
    elif any(len(j.strip()) > 200 for j in judges):
        problems.append("judges: a name is longer than 200 characters")
    return problems


@transaction.atomic
def stream_create(*, name, human_rate, k, window, judges, created_by, rubric: Rubric | None = None) -> Stream:
    """A new stream with its own batch (k = the stream's k). Raises ``StreamRefused``."""
    problems = stream_settings_problems(name=name, human_rate=human_rate, k=k, window=window, judges=judges)
    if problems:
        raise StreamRefused(problems)
    rubric = rubric or Rubric.default()
    try:
        batch = batch_create(name=BATCH_PREFIX + name, k=k, rubric=rubric, created_by=created_by)
    except ImportRefused as exc:
        raise StreamRefused([str(e) for e in exc.errors]) from None
    try:
        with transaction.atomic():
            return Stream.objects.create(
                name=name,
                rubric=rubric.to_dict(),
                judges=[j.strip() for j in judges],
                human_rate=float(human_rate),
                k=k,
                window=str(window),
                salt=new_salt(),
                batch=batch,
                created_by=created_by,
            )
    except IntegrityError:
        raise StreamRefused([f"name: a stream named \u201c{name}\u201d already exists"]) from None
