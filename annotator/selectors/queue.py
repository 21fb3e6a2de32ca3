"""What an annotator may see: the batches open to them and their own progress.

Nothing here returns another annotator's scores, flags or comments, or per-item counts:
the only figures about other people's work are the batch's complete/total item counts.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection
from django.db.models import (
    BooleanField,
    Count,
    Exists,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
)
from django.db.models.expressions import RawSQL
from django.db.models.functions import Coalesce

from annotator.models import Annotation, Assignment, Batch, Item


def _open_to(user) -> Q:
    restricted = Batch.annotators.through.objects.filter(batch_id=OuterRef("pk"))
    return Q(~Exists(restricted)) | Q(Exists(restricted.filter(user_id=user.pk)))


def _may_rate(batch_column: str, user) -> RawSQL:
    """True when the batch names no annotators or names this one (cheap to build: it runs
    on every rating request)."""
    through = connection.ops.quote_name(Batch.annotators.through._meta.db_table)
    sql = (
        f"(NOT EXISTS (SELECT 1 FROM {through} r WHERE r.batch_id = {batch_column})"
        f" OR EXISTS (SELECT 1 FROM {through} r WHERE r.batch_id = {batch_column} AND r.user_id = %s))"
    )
    return RawSQL(sql, (user.pk,), output_field=BooleanField())


def batches_open_to(*, user) -> QuerySet[Batch]:
    """Open batches this annotator may rate: all of them unless an admin named annotators."""
    return Batch.objects.filter(is_open=True).filter(_open_to(user))


def batch_open_to(*, user, batch_id: int) -> Batch | None:
    table = connection.ops.quote_name(Batch._meta.db_table)
    return Batch.objects.filter(pk=batch_id, is_open=True).filter(_may_rate(f"{table}.id", user)).first()


def batch_of_own_work(*, user, batch_id: int) -> Batch | None:
    """A batch open to the annotator, or one they rated in (to reopen their own work after
    it closed)."""
    own = Annotation.objects.filter(item__batch_id=OuterRef("pk"), annotator=user)
    return Batch.objects.filter(pk=batch_id).filter((Q(is_open=True) & _open_to(user)) | Q(Exists(own))).first()


def item_open_to(*, user, item_pk: int) -> Item | None:
    """The item with its batch, if the batch is open to this annotator."""
    table = connection.ops.quote_name(Item._meta.db_table)
    items = Item.objects.select_related("batch").filter(pk=item_pk, batch__is_open=True)
    return items.filter(_may_rate(f"{table}.batch_id", user)).first()


@dataclass(frozen=True)
class BatchProgress:
    batch: Batch
    items_total: int
    items_complete: int
    mine_submitted: int
    mine_leased: bool

    @property
    def percent_complete(self) -> int:
        return round(100 * self.items_complete / self.items_total) if self.items_total else 0


def _grouped_count(queryset: QuerySet, group: str) -> Subquery:
    return Coalesce(
        Subquery(queryset.order_by().values(group).annotate(n=Count("pk")).values("n")[:1]),
        0,
        output_field=IntegerField(),
    )


def queue_for_annotator(*, user) -> list[BatchProgress]:
    """One row per batch open to the annotator, with their own and the batch's progress."""
    batches = batches_open_to(user=user).annotate(
        items_total=_grouped_count(Item.objects.filter(batch=OuterRef("pk")), "batch"),
        items_complete=_grouped_count(
            Item.objects.filter(batch=OuterRef("pk"), n_annotations__gte=OuterRef("k")), "batch"
        ),
        mine_submitted=_grouped_count(
            Annotation.objects.filter(item__batch=OuterRef("pk"), annotator=user), "annotator"
        ),
        mine_leased=Exists(
            Assignment.objects.filter(item__batch=OuterRef("pk"), annotator=user, state=Assignment.State.LEASED)
        ),
    ).order_by("name")
    return [
        BatchProgress(
            batch=b,
            items_total=b.items_total,
            items_complete=b.items_complete,
            mine_submitted=b.mine_submitted,
            mine_leased=b.mine_leased,
        )
        for b in batches
    ]


def annotations_of(*, user, batch: Batch) -> QuerySet[Annotation]:
    """The annotator's own annotations in a batch, newest first, with their scores."""
    return (
        Annotation.objects.filter(annotator=user, item__batch=batch)
        .select_related("item")
        .prefetch_related("scores")
        .order_by("-submitted_at", "-pk")
    )


def annotation_of(*, user, pk: int) -> QuerySet[Annotation]:
    """The annotator's own annotation with this id (empty for anyone else's: a 404, not a 403)."""
    return Annotation.objects.select_related("item__batch").filter(pk=pk, annotator=user)



def conversation_turns(item: Item) -> list[dict[str, str]]:
    """The item's conversation as (role, content) turns, whatever shape the upload used."""
    turns = []
    for turn in item.conversation or []:
        if isinstance(turn, dict):
            role = str(turn.get("role") or turn.get("speaker") or turn.get("from") or "")
            content = turn.get("content", turn.get("text", turn.get("value", "")))
        else:
            role, content = "", turn
        kind = "user" if role.lower() in {"user", "human", "customer"} else "assistant" if role else "other"
        turns.append({"role": role or "turn", "content": str(content), "kind": kind})
    return turns
