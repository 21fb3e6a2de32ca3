"""Gold items: storing them, handing them out (training first, then checks mixed into the queue)
and scoring the answers, which moves the annotator's standing (training passed or failed, a
warning, a block)."""

from __future__ import annotations

import hashlib
import hmac
import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from annotator.models import (
    Annotation,
    AnnotatorStanding,
    Batch,
    GoldAnswer,
    GoldItem,
    QualityRule,
)
from annotator.quality.selectors.standing import check_counts, quality_rule_of, training_answers
from annotator.quality.services.exclusion import annotator_block, annotator_screen_out
from annotator.uploads.files.gold_columns import GoldRow
from hcs import quality_rules as q

if TYPE_CHECKING:
    from annotator.uploads.files.columns import Frame

TRAINING, CHECK = GoldItem.Kind.TRAINING, GoldItem.Kind.CHECK


@transaction.atomic
def gold_items_create(*, batch: Batch, gold: Sequence[GoldRow], frame: Frame) -> int:
    """Store the gold rows of an import (``frame`` holds their item text, in the same order)."""
    records = frame.to_dict("records")
    GoldItem.objects.bulk_create(
        GoldItem(
            batch=batch,
            item_id=rec["item_id"],
            kind=g.kind,
            position=n,
            prompt=rec["prompt"],
            response=rec["response"],
            context=rec["context"],
            expected_output=rec["expected_output"],
            constraints=json.loads(rec["constraints"]),
            conversation=json.loads(rec["conversation"]),
            system_id=rec["system_id"],
            metadata=json.loads(rec["metadata"]),
            scores=g.scores,
            flags=g.flags,
            tolerance=g.tolerance,
            explanation=g.explanation,
        )
        for n, (g, rec) in enumerate(zip(gold, records, strict=True))
    )
    n_training = sum(1 for g in gold if g.kind == TRAINING)
    QualityRule.objects.update_or_create(batch=batch, defaults={"training_items": n_training})
    return len(gold)


def quality_rule_set(*, batch: Batch, values: dict) -> QualityRule:
    """Make or change the batch's quality rule (one per batch: a second admin saving at the same
    moment updates the same row)."""
    rule, _ = QualityRule.objects.update_or_create(batch=batch, defaults=values)
    return rule


@dataclass(frozen=True)
class GoldStep:
    """What a gold answer led to, for the page that follows it."""

    answer: GoldAnswer
    comparison: q.GoldComparison
    standing: str  # hcs.quality OK / WARN / BLOCK (checks); "passed" / "failed" / "" (training)


@dataclass(frozen=True)
class GoldCounts:
    """What gold_pending reads, when the caller read it already (``annotator.rating.selectors.facts``)."""

    open_answer_id: int | None  # a gold item shown and not answered yet
    rated: int  # the annotator's annotations in the batch
    checks_shown: int


def gold_pending(
    *,
    batch: Batch,
    annotator,
    rule: QualityRule,
    standing: AnnotatorStanding | None,
    now: datetime | None = None,
    known: GoldCounts | None = None,
) -> GoldAnswer | None:
    """The gold item to show this annotator now, or None for a regular item.

    Training items come first, in file order, until the annotator has done the batch's number
    of them. Then one item in ``rule.check_every`` is a check, drawn at random among the checks
    they have not seen, at a place in each block of ``check_every - 1`` ratings that the annotator
    cannot predict (``check_offset``).
    """
    now = now or timezone.now()
    answers = GoldAnswer.objects.select_related("gold_item__batch")
    if known is None:
        open_answer = answers.filter(
            gold_item__batch=batch, annotator=annotator, submitted_at__isnull=True
        ).first()
    else:
        open_answer = answers.filter(pk=known.open_answer_id).first() if known.open_answer_id else None
    if open_answer is not None:
        return open_answer
    if rule.training_items and (standing is None or standing.training != AnnotatorStanding.Training.PASSED):
        done = training_answers(batch=batch, annotator=annotator)
        if len(done) < rule.training_items:
            nxt = (
                GoldItem.objects.filter(batch=batch, kind=TRAINING)
                .exclude(answers__annotator=annotator)
                .first()
            )
            if nxt is not None:
                return _show(nxt, annotator, now)
    if rule.check_every < 2:
        return None
    if known is None:
        rated = Annotation.objects.filter(item__batch=batch, annotator=annotator).count()
        *_, shown = check_counts(batch=batch, annotator=annotator)
    else:
        rated, shown = known.rated, known.checks_shown
    if not check_due(
        rated=rated, shown=shown, check_every=rule.check_every, batch=batch, annotator=annotator
    ):
        return None
    unseen = list(
        GoldItem.objects.filter(batch=batch, kind=CHECK)
        .exclude(answers__annotator=annotator)
        .values_list("pk", flat=True)[:200]
    )
    if not unseen:
        return None
    return _show(GoldItem.objects.get(pk=random.choice(unseen)), annotator, now)


def check_offset(*, batch: Batch, annotator, block: int, check_every: int) -> int:
    """After how many of block ``block``'s ``check_every - 1`` ratings its check comes (1 … check_every - 1).

    Drawn per annotator and block from a keyed hash, so it is stable across requests and needs no
    stored state, yet a worker who counts their ratings (checks are not among them) cannot tell
    when the next check comes: a fixed place in every block would give them away."""
    per_block = check_every - 1
    message = f"check:{batch.pk}:{annotator.pk}:{block}".encode()
    digest = hmac.new(settings.SECRET_KEY.encode(), message, hashlib.sha256).digest()
    return 1 + int.from_bytes(digest[:8], "big") % per_block


def check_due(*, rated: int, shown: int, check_every: int, batch: Batch, annotator) -> bool:
    """Whether the annotator's next form is a check: one check in every block of ``check_every - 1``
    ratings, at a place in the block drawn by ``check_offset``."""
    per_block = check_every - 1
    offset = check_offset(batch=batch, annotator=annotator, block=shown, check_every=check_every)
    return rated >= shown * per_block + offset


def _show(gold: GoldItem, annotator, now: datetime) -> GoldAnswer:
    answer, _ = GoldAnswer.objects.get_or_create(
        gold_item=gold, annotator=annotator, defaults={"shown_at": now}
    )
    return answer


def _compare(answer: GoldAnswer, scores: Mapping[str, int], flags: Sequence[str]) -> q.GoldComparison:
    gold = answer.gold_item
    rubric = gold.batch.rubric_obj
    return q.compare_with_gold(
        scores,
        gold.scores,
        tolerance=gold.tolerance,
        flags=flags,
        gold_flags=gold.flags,
        compared_flags={r.flag for r in rubric.rules},  # the caps: flags that limit a score
    )


@transaction.atomic
def gold_answer_submit(
    *,
    answer: GoldAnswer,
    annotator,
    scores: Mapping[str, int],
    flags: Sequence[str] = (),
    comment: str = "",
    constraints_met: Sequence[bool] = (),
    now: datetime | None = None,
) -> GoldStep:
    """Score the annotator's answer to a gold item and apply the batch's rules."""
    now = now or timezone.now()
    locked = GoldAnswer.objects.select_for_update().select_related("gold_item__batch").get(pk=answer.pk)
    if locked.annotator_id != annotator.pk:
        raise ValidationError("This item was not given to you.")
    gold = locked.gold_item
    errors = gold.batch.rubric_obj.validate(scores, flags)
    if errors:
        raise ValidationError(errors)
    comparison = _compare(locked, scores, flags)
    if locked.submitted_at is not None:  # a repeat: keep the first answer
        return GoldStep(locked, _compare(locked, locked.scores, locked.flags), "")
    locked.scores, locked.flags, locked.comment = dict(scores), list(flags), comment
    locked.constraints_met = [bool(m) for m in constraints_met]
    locked.submitted_at, locked.passed = now, comparison.passed
    locked.mae, locked.flags_right = comparison.mae, comparison.flags_right
    locked.save()
    rule = quality_rule_of(batch=gold.batch)
    if gold.kind == TRAINING:
        return GoldStep(locked, comparison, _training_outcome(gold.batch, annotator, rule, now))
    return GoldStep(locked, comparison, _check_outcome(gold.batch, annotator, rule, now))


@transaction.atomic
def gold_answer_skip(
    *, answer: GoldAnswer, annotator, reason: str, now: datetime | None = None
) -> GoldAnswer:
    """A skipped check counts neither way; a skipped training item counts as wrong on every dimension."""
    if not reason.strip():
        raise ValidationError("Say why you skip this item.")
    now = now or timezone.now()
    locked = GoldAnswer.objects.select_for_update().select_related("gold_item__batch").get(pk=answer.pk)
    if locked.annotator_id != annotator.pk or locked.submitted_at is not None:
        return locked
    locked.skipped, locked.submitted_at, locked.comment = True, now, reason.strip()[:2000]
    if locked.gold_item.kind == TRAINING:
        span = locked.gold_item.batch.rubric_obj.scale_max - locked.gold_item.batch.rubric_obj.scale_min
        locked.passed, locked.mae, locked.flags_right = False, float(span), False
    locked.save()
    if locked.gold_item.kind == TRAINING:
        _training_outcome(
            locked.gold_item.batch, annotator, quality_rule_of(batch=locked.gold_item.batch), now
        )
    return locked


def _standing(batch: Batch, annotator) -> AnnotatorStanding:
    standing, _ = AnnotatorStanding.objects.select_for_update().get_or_create(
        batch=batch, annotator=annotator
    )
    return standing


def _training_outcome(batch: Batch, annotator, rule: QualityRule, now: datetime) -> str:
    done = training_answers(batch=batch, annotator=annotator)
    available = GoldItem.objects.filter(batch=batch, kind=TRAINING).count()
    if len(done) < min(rule.training_items, available):
        return ""
    passed = q.training_passed(
        [a.mae for a in done], [bool(a.flags_right) for a in done], max_mae=rule.training_max_mae
    )
    standing = _standing(batch, annotator)
    if standing.training:
        return standing.training
    if passed:
        standing.training = AnnotatorStanding.Training.PASSED
        standing.save(update_fields=["training"])
    else:
        annotator_screen_out(batch=batch, annotator=annotator, reason="did not pass training", now=now)
    return AnnotatorStanding.Training.PASSED if passed else AnnotatorStanding.Training.FAILED


def _check_outcome(batch: Batch, annotator, rule: QualityRule, now: datetime) -> str:
    passed, failed, _ = check_counts(batch=batch, annotator=annotator)
    verdict = q.check_standing(
        passed,
        failed,
        warn_below=rule.check_warn_below,
        block_below=rule.check_block_below,
        min_answered=rule.check_min_answered,
    )
    if verdict == q.WARN:
        standing = _standing(batch, annotator)
        if standing.warned_at is None:
            standing.warned_at = now
            standing.save(update_fields=["warned_at"])
    elif verdict == q.BLOCK:
        accuracy = passed / (passed + failed)
        annotator_block(
            batch=batch,
            annotator=annotator,
            now=now,
            reason=f"check accuracy {accuracy:.0%} ({passed} of {passed + failed}) "
            f"under the block threshold {rule.check_block_below:.0%}",
        )
    return verdict
