"""What the rating page shows about the annotator's progress: three small queries, whatever the batch size.

Only the annotator's own counts and the batch's complete/total items: nothing about who else
rated which item.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count

from annotator.models import Assignment, Batch, GoldAnswer, Item
from annotator.services.assignment import lease_duration


@dataclass(frozen=True)
class RatingProgress:
    mine_submitted: int  # the annotator's own annotations in the batch
    mine_skipped: int
    left_for_me: int  # items with a free slot never given to the annotator (not counting this one)
    items_total: int
    items_complete: int
    leased_at: datetime | None  # when this item was given to the annotator
    lease_expires_at: datetime | None  # held for them until then

    @property
    def position(self) -> int:
        """This item's number in the annotator's own sequence (rated or skipped): 1 for their first."""
        return self.mine_submitted + self.mine_skipped + 1

    @property
    def of_at_most(self) -> int:
        """The most items the annotator can rate in the batch, counting this one."""
        return self.position + self.left_for_me

    @property
    def percent_complete(self) -> int:
        return round(100 * self.items_complete / self.items_total) if self.items_total else 0


def rating_progress(
    *, batch: Batch, item, annotator, lease: Assignment | None = None, gold_shown_at: datetime | None = None,
    count_gold: bool = False,
) -> RatingProgress:
    """The annotator's place in ``batch`` while rating ``item`` (``lease``: their assignment of
    it, when the caller has it at hand; ``count_gold``: the batch has gold items, which count in
    the annotator's sequence, one more query).

    Counts grouped by the items' progress counters (a handful of rows: k + 1 values each), so the
    queries stay cheap to build and to run whatever the batch size; what is left for the annotator
    is the items with a free slot less those ever given to them (their current item included)."""
    k = batch.k

    def free(n_annotations: int, n_leased: int) -> bool:
        return n_annotations + n_leased < k

    total = complete = open_items = 0
    counters = Item.objects.filter(batch=batch).order_by().values_list("n_annotations", "n_leased")
    for n_annotations, n_leased, n in counters.annotate(n=Count("pk")):
        total += n
        complete += n if n_annotations >= k else 0
        open_items += n if free(n_annotations, n_leased) else 0
    submitted = skipped = mine_open = 0
    mine = Assignment.objects.filter(annotator=annotator, item__batch=batch).order_by()
    for state, n_annotations, n_leased, n in mine.values_list(
        "state", "item__n_annotations", "item__n_leased"
    ).annotate(n=Count("pk")):
        submitted += n if state == Assignment.State.SUBMITTED else 0  # rated here or imported
        skipped += n if state == Assignment.State.SKIPPED else 0
        mine_open += n if free(n_annotations, n_leased) else 0
    # Gold items (training, checks) count in the annotator's sequence, so a check's number looks
    # like any other item's and the item after it does not repeat it.
    if count_gold:
        submitted += GoldAnswer.objects.filter(
            annotator=annotator, gold_item__batch=batch, submitted_at__isnull=False
        ).count()
    if not isinstance(item, Item):  # a gold item: held like any item from when it was shown
        held = (gold_shown_at, gold_shown_at + lease_duration()) if gold_shown_at else (None, None)
    elif lease is not None and lease.item_id == item.pk and lease.state == Assignment.State.LEASED:
        held = (lease.leased_at, lease.lease_expires_at)
    else:
        held = (
            Assignment.objects.filter(item=item, annotator=annotator, state=Assignment.State.LEASED)
            .values_list("leased_at", "lease_expires_at")
            .first()
        ) or (None, None)
    return RatingProgress(
        mine_submitted=submitted,
        mine_skipped=skipped,
        left_for_me=max(0, open_items - mine_open),
        items_total=total,
        items_complete=complete,
        leased_at=held[0],
        lease_expires_at=held[1],
    )
