"""What an annotator gets next in a batch: the end (blocked, excluded, failed training), a gold
item (training first, then checks mixed into the queue), or a regular item on lease."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from annotator.models import Assignment, Batch, GoldAnswer, QualityRule
from annotator.quality.selectors.standing import standing_of
from annotator.quality.services.gold import GoldCounts, gold_pending
from annotator.rating.selectors.facts import RatingFacts
from annotator.rating.services.assignment import item_next_for_annotator

ENDED_BLOCKED, ENDED_TRAINING = "blocked", "training"


@dataclass(frozen=True)
class NextStep:
    assignment: Assignment | None = None
    answer: GoldAnswer | None = None
    ended: str = ""  # why this annotator gets nothing more: ENDED_BLOCKED or ENDED_TRAINING
    has_gold: bool = False  # the batch has gold items (training or checks)

    @property
    def item(self):
        if self.answer is not None:
            return self.answer.gold_item
        return self.assignment.item if self.assignment is not None else None


def rating_next(
    *,
    batch: Batch,
    annotator,
    now: datetime | None = None,
    facts: RatingFacts | None = None,
    lease_until: datetime | None = None,
) -> NextStep:
    """``facts``: what the request read about the batch already (``annotator.rating.selectors.facts``):
    the annotator's standing, the batch's quality rule and the counts the check schedule needs.
    The lease checks the standing again in its own transaction. ``lease_until``: the end of the
    annotator's study session; a new lease ends then at the latest, so an item a worker cannot
    rate in time goes to the next worker when their time runs out."""
    now = now or timezone.now()
    standing = facts.standing if facts is not None else standing_of(batch=batch, annotator=annotator)
    if standing is not None and not standing.allows_rating:
        failed_training = standing.screened_out_at is not None and not standing.excluded
        return NextStep(ended=ENDED_TRAINING if failed_training else ENDED_BLOCKED)
    if facts is not None:
        rule = facts.rule
    else:
        rule = QualityRule.objects.filter(batch=batch).first()  # none: the batch has no gold items
    if rule is not None:
        known = (
            None
            if facts is None
            else GoldCounts(
                open_answer_id=facts.open_gold_answer_id,
                rated=facts.submitted,
                checks_shown=facts.checks_shown,
            )
        )
        answer = gold_pending(
            batch=batch, annotator=annotator, rule=rule, standing=standing, now=now, known=known
        )
        if answer is not None:
            return NextStep(answer=answer, has_gold=True)
    lease = item_next_for_annotator(batch=batch, annotator=annotator, now=now, until=lease_until)
    return NextStep(assignment=lease, has_gold=rule is not None)
