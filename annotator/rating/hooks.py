"""The rating package's one seam to what sits above it: ``RatingHooks``.

A rating request asks the hooks where the annotator must go instead of rating (a study's consent,
instructions or end), what ends their session (a quota, a time limit), what to do when nothing is
left, and whether their visit is over; quality control tells them when it stops an annotator, and
the writers of annotations (the rating page, the annotations import) when labels changed. The
hooks are listed by dotted path in ``RATING_HOOKS``, so the rating package imports none of them and
importing a feature registers nothing: this list is the whole registry.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Protocol

from django.utils.module_loading import import_string

if TYPE_CHECKING:
    from annotator.models import Batch
    from annotator.rating.selectors.facts import RatingFacts

RATING_HOOKS = ("annotator.studies.services.enrolment.StudyFlow", "annotator.streams.hooks.StreamLabels")


@dataclass(frozen=True)
class Detour:
    """A page to send the annotator to instead of rating: a URL name taking the batch id, and a
    warning to show there (empty: none)."""

    url_name: str
    warning: str = ""


@dataclass(frozen=True)
class Session:
    quota: int | None = None  # the most annotations the annotator may submit in the batch
    deadline: datetime | None = None  # when their session ends


class RatingHooks(Protocol):
    def before_rating(self, *, user, facts: RatingFacts, sending: bool = False) -> Detour | None:
        """Where the annotator goes before an item is handed out or taken (None: rate). It may record
        an end (a reached quota, a session past its time). ``sending``: the request carries a rating."""

    def nothing_left(self, *, user, batch: Batch) -> Detour | None:
        """Where the annotator goes when the batch has no item left for them (None: the usual page)."""

    def session(self, *, facts: RatingFacts) -> Session:
        """The quota and the session's end the rating page shows beside an item."""

    def visit_over(self, *, user, batch_id: int) -> bool:
        """Whether the annotator's visit to the batch has ended: their ratings are then final."""

    def workers(self, *, batch: Batch) -> list:
        """The batch's workers with their progress, for the admins' assignment page."""

    def annotator_stopped(self, *, user, batch: Batch, reason: str, now: datetime) -> None:
        """Quality control stopped the annotator in the batch at entry (failed training)."""

    def labels_changed(self, *, batch: Batch, item_ids: list[int]) -> None:
        """Annotations of these items of the batch were saved or changed (rated, edited or imported),
        inside the writer's transaction. Called on every submission: a hook with nothing to do for
        the batch must return without a query."""


@lru_cache(maxsize=1)
def rating_hooks() -> tuple[RatingHooks, ...]:
    return tuple(import_string(path)() for path in RATING_HOOKS)


def before_rating(*, user, facts: RatingFacts, sending: bool = False) -> Detour | None:
    for hook in rating_hooks():
        if (detour := hook.before_rating(user=user, facts=facts, sending=sending)) is not None:
            return detour
    return None


def nothing_left(*, user, batch: Batch) -> Detour | None:
    for hook in rating_hooks():
        if (detour := hook.nothing_left(user=user, batch=batch)) is not None:
            return detour
    return None


def _smallest(values):
    given = [v for v in values if v is not None]
    return min(given) if given else None


def session(*, facts: RatingFacts) -> Session:
    """The tightest quota and the earliest end among the hooks'."""
    sessions = [hook.session(facts=facts) for hook in rating_hooks()]
    return Session(
        quota=_smallest(s.quota for s in sessions), deadline=_smallest(s.deadline for s in sessions)
    )


def visit_over(*, user, batch_id: int) -> bool:
    return any(hook.visit_over(user=user, batch_id=batch_id) for hook in rating_hooks())


def workers(*, batch: Batch) -> list:
    return [worker for hook in rating_hooks() for worker in hook.workers(batch=batch)]


def annotator_stopped(*, user, batch: Batch, reason: str, now: datetime) -> None:
    for hook in rating_hooks():
        hook.annotator_stopped(user=user, batch=batch, reason=reason, now=now)


def labels_changed(*, batch: Batch, item_ids: list[int]) -> None:
    for hook in rating_hooks():
        hook.labels_changed(batch=batch, item_ids=item_ids)
