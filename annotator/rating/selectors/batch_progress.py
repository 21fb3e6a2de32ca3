"""How far a batch is: items complete, waiting on leases, still open; annotations given and needed."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Sum

from annotator.models import Batch, Item
from annotator.rating.selectors.assignment_admin import item_states


@dataclass(frozen=True)
class Progress:
    batch_id: int
    name: str
    is_open: bool
    k: int
    n_items: int
    items_complete: int
    items_leased: int
    items_open: int
    annotations_submitted: int
    annotations_needed: int

    @property
    def percent_complete(self) -> float:
        return round(100 * self.items_complete / self.n_items, 1) if self.n_items else 0.0

    @property
    def done(self) -> bool:
        return self.n_items > 0 and self.items_complete == self.n_items


def batch_progress(*, batch: Batch) -> Progress:
    states = item_states(batch=batch)
    # n_annotations counts every submitted annotation; more than k on an item does not add to what is needed.
    submitted = Item.objects.filter(batch=batch).aggregate(n=Sum("n_annotations"))["n"] or 0
    return Progress(
        batch_id=batch.pk,
        name=batch.name,
        is_open=batch.is_open,
        k=batch.k,
        n_items=states.total,
        items_complete=states.complete,
        items_leased=states.leased,
        items_open=states.open,
        annotations_submitted=submitted,
        annotations_needed=states.total * batch.k,
    )
