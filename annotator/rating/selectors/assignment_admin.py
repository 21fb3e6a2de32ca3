"""The admin's view of assignment in a batch: item states, live leases, per-annotator counts."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db.models import Count, F, Max, Q, QuerySet, Sum

from annotator.models import Assignment, Batch, Item
from annotator.roles import ANNOTATOR

S = Assignment.State


@dataclass(frozen=True)
class ItemStates:
    open: int  # has a free slot
    leased: int  # no free slot, waiting on live leases
    complete: int  # k submitted annotations
    held: int = 0  # items with at least one live lease, whatever their state
    leases: int = 0  # live leases

    @property
    def total(self) -> int:
        return self.open + self.leased + self.complete


@dataclass(frozen=True)
class Capacity:
    """With one system per prompt, each annotator takes one item per prompt, so a prompt
    answered by m systems needs m × k distinct annotators."""

    needed: int
    available: int

    @property
    def enough(self) -> bool:
        return self.available >= self.needed


def item_states(*, batch: Batch) -> ItemStates:
    counts = Item.objects.filter(batch=batch).aggregate(
        complete=Count("pk", filter=Q(n_annotations__gte=batch.k)),
        open=Count("pk", filter=Q(n_annotations__lt=batch.k - F("n_leased"))),
        total=Count("pk"),
        held=Count("pk", filter=Q(n_leased__gt=0)),
        leases=Sum("n_leased"),
    )
    return ItemStates(
        open=counts["open"],
        complete=counts["complete"],
        leased=counts["total"] - counts["open"] - counts["complete"],
        held=counts["held"],
        leases=counts["leases"] or 0,
    )


def live_leases(*, batch: Batch) -> QuerySet[Assignment]:
    return (
        Assignment.objects.filter(item__batch=batch, state=S.LEASED)
        .select_related("item", "annotator")
        .order_by("lease_expires_at", "pk")
    )


def annotator_counts(*, batch: Batch) -> list[dict]:
    return list(
        Assignment.objects.filter(item__batch=batch)
        .values("annotator__username")
        .annotate(
            submitted=Count("pk", filter=Q(state=S.SUBMITTED)),
            leased=Count("pk", filter=Q(state=S.LEASED)),
            skipped=Count("pk", filter=Q(state=S.SKIPPED)),
            expired=Count("pk", filter=Q(state__in=[S.EXPIRED, S.RELEASED])),
        )
        .order_by("annotator__username")
    )


def eligible_annotator_count(*, batch: Batch) -> int:
    named = batch.annotators.count()
    if named:
        return named
    User = get_user_model()
    return (
        User.objects.filter(is_active=True)
        .filter(Q(groups__name=ANNOTATOR) | Q(is_staff=True))
        .distinct()
        .count()
    )


def capacity(*, batch: Batch) -> Capacity | None:
    """None unless the batch gives one system per prompt."""
    if not batch.one_system_per_prompt:
        return None
    per_prompt = (
        Item.objects.filter(batch=batch).exclude(prompt_id="").values("prompt_id").annotate(n=Count("pk"))
    ).aggregate(most=Max("n"))["most"] or 1
    return Capacity(needed=per_prompt * batch.k, available=eligible_annotator_count(batch=batch))


def recent_skips(*, batch: Batch, limit: int = 50) -> QuerySet[Assignment]:
    return (
        Assignment.objects.filter(item__batch=batch, state=S.SKIPPED)
        .select_related("item", "annotator")
        .order_by("-finished_at")[:limit]
    )
