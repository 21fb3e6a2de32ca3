"""What an annotator may see: the batches open to them and their own progress.

Nothing here returns another annotator's scores, flags or comments, or per-item counts:
the only figures about other people's work are the batch's complete/total item counts.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection
from django.db.models import (
    Count,
    Exists,
    IntegerField,
    Max,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
)
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotator.models import (
    AccountScope,
    Annotation,
    AnnotatorStanding,
    Assignment,
    Batch,
    Enrolment,
    GoldAnswer,
    Item,
)
from annotator.rating.services.assignment_sql import candidate_items
from annotator.turns import NO_ROLE, is_user, normalise_turns


# The batch-access rule: the batch names no annotators or names this one, and the account is not
# limited to other batches (a link-made account: AccountScope). Its ORM and SQL spellings are kept
# side by side; tests/annotator/rating/test_rule_parity.py checks they select the same batches.
def batch_access_q(user, batch: str = "pk") -> Q:
    """The rule as a ``Q`` on a query whose field ``batch`` holds the batch's id."""
    restricted = Batch.annotators.through.objects.filter(batch_id=OuterRef(batch))
    scoped = AccountScope.batches.through.objects.filter(accountscope__user_id=user.pk)
    in_scope = Q(~Exists(AccountScope.objects.filter(user_id=user.pk))) | Q(
        Exists(scoped.filter(batch_id=OuterRef(batch)))
    )
    return (Q(~Exists(restricted)) | Q(Exists(restricted.filter(user_id=user.pk)))) & in_scope


def batch_access_sql(batch_column: str, user) -> tuple[str, list]:
    """The rule as SQL on ``batch_column``, with its parameters (none for ``user=None``: the text alone)."""
    q = connection.ops.quote_name
    through = q(Batch.annotators.through._meta.db_table)
    scope, scope_batches = q(AccountScope._meta.db_table), q(AccountScope.batches.through._meta.db_table)
    sql = (
        f"((NOT EXISTS (SELECT 1 FROM {through} r WHERE r.batch_id = {batch_column})"
        f" OR EXISTS (SELECT 1 FROM {through} r WHERE r.batch_id = {batch_column} AND r.user_id = %s))"
        f" AND (NOT EXISTS (SELECT 1 FROM {scope} s WHERE s.user_id = %s)"
        f" OR EXISTS (SELECT 1 FROM {scope_batches} sb JOIN {scope} s ON s.id = sb.accountscope_id"
        f" WHERE s.user_id = %s AND sb.batch_id = {batch_column})))"
    )
    return sql, [] if user is None else [user.pk, user.pk, user.pk]


def batches_open_to(*, user) -> QuerySet[Batch]:
    """Open batches this annotator may rate: all of them unless an admin named annotators."""
    return Batch.objects.filter(is_open=True).filter(batch_access_q(user))


def batch_open_to(*, user, batch_id: int) -> Batch | None:
    """The open batch with this id, if this annotator may rate it."""
    return batches_open_to(user=user).filter(pk=batch_id).first()


def batch_of_own_work(*, user, batch_id: int) -> Batch | None:
    """A batch open to the annotator, or one they rated in (to reopen their own work after
    it closed)."""
    own = Annotation.objects.filter(item__batch_id=OuterRef("pk"), annotator=user)
    return (
        Batch.objects.filter(pk=batch_id)
        .filter((Q(is_open=True) & batch_access_q(user)) | Q(Exists(own)))
        .first()
    )


def holds_live_lease(*, user, item: Item) -> bool:
    """Whether ``user`` holds an unexpired lease on ``item``: only then may a page show it to them
    again (a form sent back with errors, a skip without a reason)."""
    return Assignment.objects.filter(
        item=item, annotator=user, state=Assignment.State.LEASED, lease_expires_at__gt=timezone.now()
    ).exists()


@dataclass(frozen=True)
class BatchProgress:
    batch: Batch
    items_total: int
    items_complete: int
    mine_submitted: int  # their annotations: the rating and end pages' "You rated", what the edit list holds
    mine_leased: bool
    ended: bool = False  # their ratings are final (see ratings_final): no Start button, no edit link
    visit_over: bool = False  # their study visit is over
    nothing_left: bool = False  # no item left that they may get, and nothing on their screen
    crowd: bool = False  # they came by a study link: Start then ends their visit with its code

    @property
    def percent_complete(self) -> int:
        return round(100 * self.items_complete / self.items_total) if self.items_total else 0


def _stopped(user, batch) -> Exists:
    return Exists(AnnotatorStanding.objects.filter(AnnotatorStanding.STOPPED, batch=batch, annotator=user))


def _visit_over(user, batch) -> Exists:
    return Exists(Enrolment.objects.filter(Enrolment.VISIT_OVER, batch=batch, user=user))


def ratings_final(*, user, batch_id: int) -> bool:
    """Whether the annotator's ratings in the batch can no longer change: quality control stopped
    them (screened out, failed training, blocked, excluded) or their study visit is over. The one
    rule behind the queue's edit link, the list's Edit links, the edit page and ``annotation_update``."""
    return (
        Batch.objects.filter(pk=batch_id)
        .filter(Q(_stopped(user, OuterRef("pk"))) | Q(_visit_over(user, OuterRef("pk"))))
        .exists()
    )


def _grouped_count(queryset: QuerySet, group: str) -> Subquery:
    return Coalesce(
        Subquery(queryset.order_by().values(group).annotate(n=Count("pk")).values("n")[:1]),
        0,
        output_field=IntegerField(),
    )


def counted_annotations(*, batch: Batch) -> QuerySet[Annotation]:
    """The batch's rated items as a study counts them: its annotations. The one rule behind the quota,
    "You rated" on the worker's pages, ``items_done`` in the workers list and CSV, the completion code
    and what the Prolific review approves and pays per item for. Training answers and gold checks are
    not among them: a check comes on top of the quota (``annotator.studies.selectors.answered_checks``)."""
    return Annotation.objects.filter(item__batch=batch)


def queue_for_annotator(*, user) -> list[BatchProgress]:
    """One row per batch open to the annotator, with their own and the batch's progress."""
    batches = (
        batches_open_to(user=user)
        .annotate(
            items_total=_grouped_count(Item.objects.filter(batch=OuterRef("pk")), "batch"),
            items_complete=_grouped_count(
                Item.objects.filter(batch=OuterRef("pk"), n_annotations__gte=OuterRef("k")), "batch"
            ),
            mine_submitted=_grouped_count(
                counted_annotations(batch=OuterRef("pk")).filter(annotator=user), "annotator"
            ),
            mine_leased=Exists(
                Assignment.objects.filter(batch=OuterRef("pk"), annotator=user, state=Assignment.State.LEASED)
            ),
            stopped=_stopped(user, OuterRef("pk")),
            visit_over=_visit_over(user, OuterRef("pk")),
            # Slots held by others' leases count as left: such a lease may run out, and then Start works.
            items_left=Exists(
                candidate_items(
                    annotator_id=user.pk,
                    batch_id=OuterRef("pk"),
                    k=OuterRef("k"),
                    one_system_per_prompt=OuterRef("one_system_per_prompt"),
                    free_slot=False,
                )
            ),
            gold_open=Exists(
                GoldAnswer.objects.filter(
                    gold_item__batch=OuterRef("pk"), annotator=user, submitted_at__isnull=True
                )
            ),
            crowd=Exists(Enrolment.objects.filter(batch=OuterRef("pk"), user=user).exclude(worker_id="")),
        )
        .order_by("name")
    )
    return [
        BatchProgress(
            batch=b,
            items_total=b.items_total,
            items_complete=b.items_complete,
            mine_submitted=b.mine_submitted,
            mine_leased=b.mine_leased,
            ended=b.stopped or b.visit_over,
            visit_over=b.visit_over,
            nothing_left=not (b.items_left or b.mine_leased or b.gold_open),
            crowd=b.crowd,
        )
        for b in batches
    ]


def annotations_of(*, user, batch: Batch) -> list[dict]:
    """The annotator's own annotations in a batch, newest first, ready to list: a neutral
    number (1 to n in the order they were made; never the file's item id), the prompt,
    scores and flags by their rubric labels, and when they last changed it."""
    rubric = batch.rubric_obj
    dimensions = {d.key: d for d in rubric.dimensions}
    flag_labels = {f.key: f.label for f in rubric.flags}
    annotations = list(
        Annotation.objects.filter(annotator=user, item__batch=batch)
        .select_related("item")
        .prefetch_related("scores")
        .annotate(n_changes=Count("revisions"), last_changed=Max("revisions__changed_at"))
        .order_by("-submitted_at", "-pk")
    )
    numbers = _item_numbers(user=user, batch=batch, annotations=annotations)
    rows = []
    for a in annotations:
        scores = {s.dimension: s.value for s in a.scores.all()}
        rows.append(
            {
                "annotation": a,
                "number": numbers[a.pk],
                "prompt": a.item.prompt,
                "scores": [
                    {
                        "label": d.label,
                        "abbreviation": d.abbreviation or d.label[:1],
                        "value": scores.get(key),
                    }
                    for key, d in dimensions.items()
                ],
                "flags": [flag_labels.get(f, f) for f in a.flags],
                "n_changes": a.n_changes,
                "last_changed": a.last_changed,
            }
        )
    rows.sort(key=lambda row: -row["number"])  # newest first, as numbered
    return rows


def item_number(rated_before: int) -> int:
    """An item's number for its annotator, the one rule behind the rating page's "Item n" and the
    numbers of "Your annotations": one more than the ratings they made before it, so a rating is
    listed under the number it was rated as. Training answers, gold checks and skipped items are not
    ratings (the list does not hold them): they show the number the next rating takes."""
    return rated_before + 1


def _item_numbers(*, user, batch: Batch, annotations: list[Annotation]) -> dict[int, int]:
    """Each annotation's number in the list (``item_number``): 1 to n in the order the annotator made
    them (its assignment's finish; an annotation without one, e.g. imported, by its submission time)."""
    finished = dict(
        Assignment.objects.filter(batch=batch, annotator=user, state=Assignment.State.SUBMITTED)
        .exclude(finished_at=None)
        .values_list("item_id", "finished_at")
    )
    # Ties (an import's one timestamp) fall back on the annotations' order.
    order = sorted(annotations, key=lambda a: (finished.get(a.item_id) or a.submitted_at, a.pk))
    return {a.pk: item_number(before) for before, a in enumerate(order)}


def annotation_of(*, user, pk: int) -> QuerySet[Annotation]:
    """The annotator's own annotation with this id (empty for anyone else's: a 404, not a 403)."""
    return Annotation.objects.select_related("item__batch").filter(pk=pk, annotator=user)


def conversation_turns(item: Item) -> list[dict[str, str]]:
    """The earlier turns of the item's conversation as (role, content) turns, whatever shape the
    upload used, each with its ``kind`` for the page: ``user``, ``assistant``, or ``other`` when the
    turn names no role. A trailing response and latest user turn that repeat the item's response and
    prompt are left out: the page shows those under their own headings."""
    turns = normalise_turns(item.conversation or [])
    if turns and not is_user(turns[-1]) and turns[-1]["content"].strip() == (item.response or "").strip():
        turns.pop()
    if turns and is_user(turns[-1]) and turns[-1]["content"].strip() == (item.prompt or "").strip():
        turns.pop()
    return [
        {**turn, "kind": "user" if is_user(turn) else "other" if turn["role"] == NO_ROLE else "assistant"}
        for turn in turns
    ]
