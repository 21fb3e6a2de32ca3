"""Writing annotations from the rating page: submit once, edit with history."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from annotator.db_private import CompiledQuery, CompiledWrite, insert_statement, update_statement
from annotator.db_rows import python_values
from annotator.hot_sql import hand_written_sql
from annotator.models import Annotation, AnnotationRevision, Assignment, Item, Score
from annotator.rating import hooks
from annotator.rating.selectors.queue import ratings_final
from annotator.rating.services.assignment_sql import lock_annotator, standing_allows_rating
from annotator.rating.services.submission_sql import submit_leased
from hcs.rubric import Rubric

MAX_COMMENT = 5000


class SubmissionRefused(Exception):
    """The annotation cannot be stored; the message is for the user and nothing was saved."""


@dataclass(frozen=True)
class SubmitResult:
    annotation: Annotation
    created: bool  # False: this was a repeat of a submission already stored


def _check(rubric: Rubric, scores: Mapping[str, int], flags: Sequence[str], comment: str) -> None:
    errors = rubric.validate(scores, flags)
    if len(comment) > MAX_COMMENT:
        errors.append(f"The comment is {len(comment)} characters long; keep it under {MAX_COMMENT}.")
    if errors:
        raise ValidationError(errors)


def _scores(annotation: Annotation, item_id: int, scores: Mapping[str, int]) -> list[Score]:
    return [
        Score(annotation=annotation, item_id=item_id, dimension=key, value=int(value))
        for key, value in scores.items()
    ]


def annotation_submit(
    *,
    item: Item,
    annotator,
    scores: Mapping[str, int],
    flags: Sequence[str] = (),
    comment: str = "",
    constraints_met: Sequence[bool] = (),
    now: datetime | None = None,
) -> SubmitResult:
    """Store the annotator's annotation of an item given to them, exactly once.

    A repeat (two tabs, a retry after a timeout) returns the stored annotation with
    ``created=False`` and changes nothing. A lease that ran out or was released is honoured
    only while the item still has a free slot, so no item ever exceeds k annotations.

    On PostgreSQL the common case (the annotator holds the lease) is one statement written by
    hand (``annotator.rating.services.submission_sql``), its own transaction when no caller opened one.
    Every other case, and every case on SQLite, takes the ORM path in one transaction. Both lock
    the assignment row first, then the item row (the lock order of every writer; see
    ``annotator.rating.services.assignment``).
    """
    now = now or timezone.now()
    _check(item.batch.rubric_obj, scores, flags, comment)
    fields = {
        "scores": scores,
        "flags": flags,
        "comment": comment,
        "constraints_met": constraints_met,
        "now": now,
    }
    hand = hand_written_sql()
    alone = hand and not connection.in_atomic_block
    if alone:
        annotation = submit_leased(item_id=item.pk, annotator_id=annotator.pk, **fields)
        if annotation is not None:
            hooks.labels_changed(batch=item.batch, item_ids=[item.pk])
            return SubmitResult(annotation=annotation, created=True)
    result = _submit(item=item, annotator=annotator, leased_tried=alone or not hand, **fields)
    if result.created:
        hooks.labels_changed(batch=item.batch, item_ids=[item.pk])
    return result


# The common submission's statements, written by the ORM in the connection's dialect and built
# once per process (building them on each call was a third of an htmx round trip's CPU on SQLite).
_ASSIGNMENT = CompiledQuery(
    lambda item_id, annotator_id: (
        Assignment.objects.select_for_update()
        .filter(item_id=item_id, annotator_id=annotator_id)
        .values_list("pk", "state", "leased_at")
    )
)
_LEASED_AT = Assignment._meta.get_field("leased_at")
_TAKE = CompiledWrite(
    Assignment,
    lambda slot: update_statement(
        Assignment.objects.filter(pk=slot("pk")),
        state=Assignment.State.SUBMITTED,
        finished_at=slot("finished_at"),
    ),
)
# Every column but the id, in the model's order (as Annotation.from_db takes them).
_ANNOTATION_FIELDS = [f.attname for f in Annotation._meta.concrete_fields if not f.primary_key]
_INSERT_ANNOTATION = CompiledWrite(
    Annotation,
    lambda slot: insert_statement(
        Annotation, [{name: slot(name) for name in _ANNOTATION_FIELDS}], returning_pk=True
    ),
)
_INSERT_SCORES = CompiledWrite(
    Score,
    lambda slot, n: insert_statement(
        Score,
        [{name: slot(name) for name in ("annotation_id", "item_id", "dimension", "value")} for _ in range(n)],
    ),
)
_COUNT = CompiledWrite(
    Item,
    lambda slot: update_statement(
        Item.objects.filter(pk=slot("pk")),
        n_annotations=F("n_annotations") + 1,
        n_leased=F("n_leased") - slot("n_leased"),
    ),
)


def _insert_annotation(cursor, values: list) -> int:
    cursor.execute(*_INSERT_ANNOTATION.sql(values))
    if connection.features.can_return_columns_from_insert:
        return cursor.fetchone()[0]
    return connection.ops.last_insert_id(cursor, Annotation._meta.db_table, Annotation._meta.pk.column)


@transaction.atomic
def _submit(
    *, item: Item, annotator, scores, flags, comment, constraints_met, now, leased_tried: bool
) -> SubmitResult:
    if not leased_tried:
        annotation = submit_leased(  # takes the user-row lock first, as lock_annotator below
            item_id=item.pk,
            annotator_id=annotator.pk,
            scores=scores,
            flags=flags,
            comment=comment,
            constraints_met=constraints_met,
            now=now,
        )
        if annotation is not None:  # the common case: the lease was live and is now a submission
            return SubmitResult(annotation=annotation, created=True)
    lock_annotator(annotator_id=annotator.pk)  # before the assignment row: see exclusion's lock order
    with connection.cursor() as cursor:
        cursor.execute(*_ASSIGNMENT.sql(item.pk, annotator.pk))
        assignment = cursor.fetchone()
    if assignment is None:
        raise SubmissionRefused("This item was not given to you, so nothing was saved.")
    assignment_id, state, leased_at = assignment
    if state == Assignment.State.SUBMITTED:
        existing = Annotation.objects.get(item=item, annotator=annotator)
        return SubmitResult(annotation=existing, created=False)
    if state == Assignment.State.SKIPPED:
        raise SubmissionRefused("You skipped this item, so this rating was not saved.")
    held_slot = state == Assignment.State.LEASED
    if not held_slot:
        # A live lease always belongs to someone who may rate (an exclusion releases the leases
        # it finds, and no lease is given after it); a lapsed or released one is checked here.
        if not standing_allows_rating(batch_id=item.batch_id, annotator_id=annotator.pk):
            raise SubmissionRefused("You are no longer rating in this batch, so this rating was not saved.")
        # The lease ran out or an admin released it: honoured only while a slot is free.
        locked = Item.objects.select_for_update().only("n_annotations", "n_leased").get(pk=item.pk)
        if locked.n_annotations + locked.n_leased >= item.batch.k:
            raise SubmissionRefused(
                "Your time on this item ran out and it has been given to other annotators, "
                "so this rating was not saved."
            )
    fields = {
        "item_id": item.pk,
        "annotator_id": annotator.pk,
        "flags": list(flags),
        "comment": comment,
        "constraints_met": [bool(m) for m in constraints_met],
        "source": Annotation.Source.WEB,
        "started_at": python_values(Assignment, [_LEASED_AT], [leased_at])[0],
        "submitted_at": now,
        "updated_at": now,
    }
    score_rows = [(key, int(value)) for key, value in scores.items()]
    with connection.cursor() as cursor:
        cursor.execute(*_TAKE.sql([assignment_id, now]))
        annotation_id = _insert_annotation(cursor, [fields[name] for name in _ANNOTATION_FIELDS])
        if score_rows:
            values = [x for key, value in score_rows for x in (annotation_id, item.pk, key, value)]
            cursor.execute(*_INSERT_SCORES.sql(values, len(score_rows)))
        cursor.execute(*_COUNT.sql([item.pk, 1 if held_slot else 0]))
    annotation = Annotation.from_db(
        connection.alias,
        ["id", *_ANNOTATION_FIELDS],
        [annotation_id, *(fields[n] for n in _ANNOTATION_FIELDS)],
    )
    return SubmitResult(annotation=annotation, created=True)


@transaction.atomic
def annotation_update(
    *,
    annotation: Annotation,
    changed_by,
    scores: Mapping[str, int],
    flags: Sequence[str] = (),
    comment: str = "",
    constraints_met: Sequence[bool] = (),
) -> Annotation:
    """Change an annotation, keeping its previous state as an ``AnnotationRevision``.

    Refused (``SubmissionRefused``) once the annotator's ratings in the batch are final
    (``ratings_final``), read after the same user-row lock an exclusion waits on."""
    rubric = annotation.item.batch.rubric_obj
    _check(rubric, scores, flags, comment)
    lock_annotator(annotator_id=annotation.annotator_id)
    if ratings_final(user=annotation.annotator_id, batch_id=annotation.item.batch_id):
        raise SubmissionRefused("Your ratings in this batch are final, so this change was not saved.")
    locked = Annotation.objects.select_for_update().get(pk=annotation.pk)
    old_scores = dict(locked.scores.values_list("dimension", "value"))
    new_scores = {key: int(value) for key, value in scores.items()}
    unchanged = (
        old_scores == new_scores
        and list(locked.flags) == list(flags)
        and locked.comment == comment
        and list(locked.constraints_met) == [bool(m) for m in constraints_met]
    )
    if unchanged:
        return locked
    AnnotationRevision.objects.create(
        annotation=locked,
        changed_by=changed_by,
        old_scores=old_scores,
        old_flags=list(locked.flags),
        old_comment=locked.comment,
    )
    locked.flags = list(flags)
    locked.comment = comment
    locked.constraints_met = [bool(m) for m in constraints_met]
    locked.save(update_fields=["flags", "comment", "constraints_met", "updated_at"])
    locked.scores.all().delete()
    Score.objects.bulk_create(_scores(locked, locked.item_id, new_scores))
    hooks.labels_changed(batch=annotation.item.batch, item_ids=[locked.item_id])
    return locked
