"""Reads for adjudication: who may adjudicate, the widest disagreements, an item's annotations
without their authors, and adjudicated labels for the exports."""

from __future__ import annotations

import string
from typing import Any

from django.db.models import Max, Min

from annotator.models import Adjudication, AdjudicatorGrant, Batch, Item, Score
from annotator.quality.selectors.standing import excluded_annotator_ids
from annotator.roles import is_researcher

QUEUE_LENGTH = 50


def may_adjudicate(*, user, batch_id: int) -> bool:
    return is_researcher(user) or AdjudicatorGrant.objects.filter(batch_id=batch_id, user=user).exists()


def batches_to_adjudicate(*, user):
    """Batches this user was granted to adjudicate (researchers reach every batch from the reports)."""
    return Batch.objects.filter(adjudicator_grants__user=user).order_by("-created_at")


def adjudication_queue(*, batch: Batch, limit: int = QUEUE_LENGTH) -> list[dict[str, Any]]:
    """Items with at least two valid annotations, widest disagreement first: the largest spread
    (max − min) over the dimensions, then the number of dimensions with that spread."""
    excluded = excluded_annotator_ids(batch=batch)
    spreads = (
        Score.objects.filter(item__batch=batch)
        .exclude(annotation__annotator_id__in=excluded)
        .values("item_id", "dimension")
        .annotate(lo=Min("value"), hi=Max("value"))
    )
    per_item: dict[int, list[int]] = {}
    for row in spreads:
        per_item.setdefault(row["item_id"], []).append(row["hi"] - row["lo"])
    ranked = sorted(
        per_item.items(), key=lambda kv: (-max(kv[1]), -sum(1 for s in kv[1] if s == max(kv[1])), kv[0])
    )
    ranked = [(pk, s) for pk, s in ranked if max(s) > 0][:limit]
    items = Item.objects.in_bulk([pk for pk, _ in ranked])
    done = set(Adjudication.objects.filter(item_id__in=items).values_list("item_id", flat=True))
    return [{"item": items[pk], "spread": max(s), "adjudicated": pk in done} for pk, s in ranked]


def _label(n: int) -> str:
    letters = string.ascii_uppercase
    return letters[n] if n < len(letters) else f"{letters[n // 26 - 1]}{letters[n % 26]}"


def blind_annotations(*, item: Item) -> list[dict[str, Any]]:
    """Every annotation of the item with scores, flags, comment and constraint answers, labelled
    A, B, C in submission order: never who made it."""
    rubric = item.batch.rubric_obj
    flag_labels = {f.key: f.label for f in rubric.flags}
    excluded = excluded_annotator_ids(batch=item.batch)
    rows = []
    annotations = item.annotations.prefetch_related("scores").order_by("submitted_at", "id")
    for n, a in enumerate(annotations):
        scores = {s.dimension: s.value for s in a.scores.all()}
        rows.append(
            {
                "label": f"Annotator {_label(n)}",
                "values": [scores.get(d) for d in rubric.dimension_keys],
                "flags": [flag_labels.get(f, f) for f in a.flags or []],
                "comment": a.comment,
                "constraints": [
                    {"text": c, "met": met} for c, met in zip(item.constraints, a.constraints_met or [])
                ],
                "excluded": a.annotator_id in excluded,
            }
        )
    return rows


def adjudications_of(*, batch: Batch) -> list[Adjudication]:
    return list(
        Adjudication.objects.filter(item__batch=batch)
        .select_related("item", "adjudicator")
        .order_by("item__position", "item_id")
    )
