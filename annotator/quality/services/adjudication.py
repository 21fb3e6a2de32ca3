"""Writing adjudications, granting the adjudicator role for a batch, and turning an adjudicated
item into a gold item of a later batch."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from django.core.exceptions import ValidationError
from django.db import transaction

from annotator.models import (
    Adjudication,
    AdjudicatorGrant,
    Batch,
    GoldItem,
    Item,
    QualityRule,
)

MAX_NOTE = 5000


@transaction.atomic
def adjudication_save(
    *, item: Item, adjudicator, scores: Mapping[str, int], flags: Sequence[str] = (), note: str = ""
) -> Adjudication:
    """Record (or change) the adjudicated label of an item; checked with the batch's rubric."""
    note = (note or "").strip()
    errors = item.batch.rubric_obj.validate(scores, flags)
    if not note:
        errors.append("Write a note saying why: it is kept with the label.")
    elif len(note) > MAX_NOTE or "\x00" in note:
        errors.append(f"The note must be text under {MAX_NOTE} characters.")
    if errors:
        raise ValidationError(errors)
    adjudication, _ = Adjudication.objects.update_or_create(
        item=item,
        defaults={
            "adjudicator": adjudicator,
            "scores": {k: int(v) for k, v in scores.items()},
            "flags": list(flags),
            "note": note,
        },
    )
    return adjudication


@transaction.atomic
def adjudicator_grant(*, batch: Batch, user, by) -> AdjudicatorGrant:
    grant, _ = AdjudicatorGrant.objects.get_or_create(batch=batch, user=user, defaults={"granted_by": by})
    return grant


@transaction.atomic
def adjudicator_revoke(*, batch: Batch, user) -> None:
    AdjudicatorGrant.objects.filter(batch=batch, user=user).delete()


@transaction.atomic
def adjudication_to_gold(
    *, adjudication: Adjudication, batch: Batch, kind: str = GoldItem.Kind.CHECK
) -> GoldItem:
    """One step: the adjudicated item becomes a gold item (the adjudicated label as the expert's
    answer, the note as its explanation) of another batch that uses the same rubric."""
    item = adjudication.item
    if batch.pk == item.batch_id:
        raise ValidationError("Choose a later batch: an item cannot be gold in its own batch.")
    if kind not in GoldItem.Kind.values:
        raise ValidationError(f"{kind!r} is not a gold kind; use training or check.")
    if batch.rubric_obj.dimension_keys != item.batch.rubric_obj.dimension_keys:
        raise ValidationError(f"“{batch.name}” uses another rubric, so this label does not fit it.")
    if (
        GoldItem.objects.filter(batch=batch, item_id=item.item_id).exists()
        or Item.objects.filter(batch=batch, item_id=item.item_id).exists()
    ):
        raise ValidationError(f"“{batch.name}” already has an item {item.item_id}.")
    position = GoldItem.objects.filter(batch=batch).count()
    gold = GoldItem.objects.create(
        batch=batch,
        item_id=item.item_id,
        kind=kind,
        position=position,
        prompt=item.prompt,
        response=item.response,
        context=item.context,
        expected_output=item.expected_output,
        constraints=item.constraints,
        conversation=item.conversation,
        system_id=item.system_id,
        metadata={"adjudicated_from": {"batch": item.batch.name, "item_id": item.item_id}},
        scores=adjudication.scores,
        flags=adjudication.flags,
        explanation=adjudication.note,
    )
    rule, _ = QualityRule.objects.get_or_create(batch=batch)
    if kind == GoldItem.Kind.TRAINING:
        rule.training_items = GoldItem.objects.filter(batch=batch, kind=kind).count()
        rule.save(update_fields=["training_items"])
    return gold
