"""What a rating request needs to know about its batch.

Every rating request (next item, submit, skip) reads the batch, checks that it is open to the
annotator, and then asks the study gate (their enrolment and the study link it came by) and
quality control (their standing and the batch's rule) what to do; a quota and the check schedule
need the annotator's count of annotations, quality control their open gold answer and checks
shown. They are read in one statement written by hand, whose text is built once and is the same
on both databases: building its ORM spelling cost more CPU than the rest of the round trip
(docs/performance.md, "One SQL dialect").

The standing read here only decides what to show; the lease statement checks it again inside
its transaction (``annotator.rating.services.assignment_sql``), which is what keeps exclusions exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from django.db import connection, models

from annotator.db_rows import columns, instance_from_row
from annotator.hot_sql import hot_cursor
from annotator.models import (
    Annotation,
    AnnotatorStanding,
    Batch,
    Enrolment,
    GoldAnswer,
    GoldItem,
    Item,
    QualityRule,
    StudyLink,
)
from annotator.rating.selectors.queue import batch_access_sql


@dataclass
class RatingFacts:
    batch: Batch
    item: Item | None  # the item a submit or skip names (None on the next-item page)
    enrolment: Enrolment | None  # with its study link loaded
    standing: AnnotatorStanding | None
    rule: QualityRule | None  # None: the batch has no gold items
    # Read only where a limit or quality control needs them (None: not read):
    submitted: int | None = None  # the annotator's annotations in the batch (quota, check schedule)
    open_gold_answer_id: int | None = None  # a gold item shown to them and not answered yet
    checks_shown: int | None = None  # check items shown to them

    def note_submitted(self) -> None:
        """The request stored one more annotation since the facts were read."""
        if self.submitted is not None:
            self.submitted += 1


def _joined(model: type[models.Model], row, start: int) -> tuple[models.Model | None, int]:
    """The instance in ``row`` from ``start`` (None when its LEFT JOIN found no row), and where the next starts."""
    n = len(model._meta.concrete_fields)
    part = row[start : start + n]
    return (None if part[0] is None else instance_from_row(model, part)), start + n


@lru_cache(maxsize=8)
def _sql(by_item: bool) -> str:
    """The statement's text, built once per process."""
    qn = connection.ops.quote_name
    table = lambda model: qn(model._meta.db_table)  # noqa: E731
    if by_item:
        select, source, where = (
            f"{columns(Item, 'i')}, ",
            f"{table(Item)} i INNER JOIN {table(Batch)} b ON b.id = i.batch_id",
            "i.id = %s",
        )
    else:
        select, source, where = "", f"{table(Batch)} b", "b.id = %s"
    access, _ = batch_access_sql("b.id", None)
    answers = f"{table(GoldAnswer)} ga INNER JOIN {table(GoldItem)} gi ON gi.id = ga.gold_item_id"
    # Evaluated only when a quota or the batch's quality rule needs them (CASE: lazily, on both databases).
    counts = (
        "CASE WHEN b.max_items_per_annotator IS NOT NULL OR sl.quota IS NOT NULL OR qr.id IS NOT NULL THEN"
        f" (SELECT COUNT(*) FROM {table(Annotation)} an INNER JOIN {table(Item)} ai ON ai.id = an.item_id"
        " WHERE an.annotator_id = %s AND ai.batch_id = b.id) END,"
        f" CASE WHEN qr.id IS NOT NULL THEN (SELECT ga.id FROM {answers} WHERE gi.batch_id = b.id"
        " AND ga.annotator_id = %s AND ga.submitted_at IS NULL ORDER BY ga.shown_at, ga.id LIMIT 1) END,"
        f" CASE WHEN qr.id IS NOT NULL THEN (SELECT COUNT(*) FROM {answers} WHERE gi.batch_id = b.id"
        " AND gi.kind = %s AND ga.annotator_id = %s) END"
    )
    return (
        f"SELECT {select}{columns(Batch, 'b')}, {columns(Enrolment, 'e')}, {columns(StudyLink, 'sl')},"
        f" {columns(AnnotatorStanding, 'st')}, {columns(QualityRule, 'qr')}, {counts}"
        f" FROM {source}"
        f" LEFT JOIN {table(Enrolment)} e ON e.batch_id = b.id AND e.user_id = %s"
        f" LEFT JOIN {table(StudyLink)} sl ON sl.id = e.study_link_id"
        f" LEFT JOIN {table(AnnotatorStanding)} st ON st.batch_id = b.id AND st.annotator_id = %s"
        f" LEFT JOIN {table(QualityRule)} qr ON qr.batch_id = b.id"
        f" WHERE {where} AND b.is_open AND {access}"
    )


def _read(*, user, item_pk: int | None = None, batch_id: int | None = None) -> RatingFacts | None:
    sql = _sql(item_pk is not None)
    key = item_pk if item_pk is not None else batch_id
    _, may_params = batch_access_sql("b.id", user)
    with hot_cursor() as cursor:
        cursor.execute(
            sql, [user.pk, user.pk, GoldItem.Kind.CHECK, user.pk, user.pk, user.pk, key, *may_params]
        )
        row = cursor.fetchone()
    if row is None:
        return None
    item, at = _joined(Item, row, 0) if item_pk is not None else (None, 0)
    batch, at = _joined(Batch, row, at)
    enrolment, at = _joined(Enrolment, row, at)
    link, at = _joined(StudyLink, row, at)
    standing, at = _joined(AnnotatorStanding, row, at)
    rule, at = _joined(QualityRule, row, at)
    submitted, open_answer_id, checks_shown = row[at:]
    if item is not None:
        item.batch = batch
    if enrolment is not None:
        enrolment.batch, enrolment.study_link = batch, link
    return RatingFacts(
        batch=batch,
        item=item,
        enrolment=enrolment,
        standing=standing,
        rule=rule,
        submitted=submitted,
        open_gold_answer_id=open_answer_id,
        checks_shown=checks_shown,
    )


def rating_facts_for_batch(*, user, batch_id: int) -> RatingFacts | None:
    """The open batch with this id, if this annotator may rate it, with what the gate and quality control need."""
    return _read(user=user, batch_id=batch_id)


def rating_facts_for_item(*, user, item_pk: int) -> RatingFacts | None:
    """The item with its batch, if the batch is open to this annotator, with the same facts."""
    return _read(user=user, item_pk=item_pk)
