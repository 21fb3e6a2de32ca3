"""Importing annotations made offline: batch, items, users, annotations and scores in one transaction."""

from __future__ import annotations

from collections import Counter

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import Group
from django.db import IntegrityError, transaction
from django.db.models import F, Max
from django.utils import timezone

from annotator.imports.annotation_file import new_item_frame
from annotator.imports.errors import ImportRefused, RowError
from annotator.models import Annotation, Assignment, Item, Score
from annotator.roles import ANNOTATOR
from annotator.selectors.imports import AnnotationImportPlan, annotation_import_plan
from annotator.services.batches import batch_create
from annotator.services.bulk import items_insert
from hcs.rubric import Rubric


@transaction.atomic
def annotations_import_file(
    *,
    data: bytes,
    filename: str,
    batch_name: str,
    k: int | None = None,
    rubric: Rubric | None = None,
    created_by=None,
    max_bytes: int | None = None,
) -> AnnotationImportPlan:
    """Check the file against the database and save everything, or raise ``ImportRefused``.

    The checks run inside the transaction, so what is saved is what was checked.
    """
    plan = annotation_import_plan(
        data=data, filename=filename, batch_name=batch_name, k=k, rubric=rubric, max_bytes=max_bytes
    )
    annotations_import(plan=plan, created_by=created_by)
    return plan


@transaction.atomic
def annotations_import(*, plan: AnnotationImportPlan, created_by=None) -> int:
    """Carry out a checked plan; returns the number of annotations saved."""
    errors = list(plan.errors)
    if not errors and not plan.parsed.annotations:
        errors.append(RowError(None, None, "The file has no annotations."))
    if errors:
        raise ImportRefused(errors)
    try:
        with transaction.atomic():
            return _write(plan=plan, created_by=created_by)
    except IntegrityError:
        # Someone rated one of these items in the browser between the checks and the insert.
        raise ImportRefused(
            ["The batch changed while the file was being saved (an annotation for one of these item and "
             "annotator pairs was just submitted); nothing was saved. Upload the file again to see which."]
        ) from None


def _write(*, plan: AnnotationImportPlan, created_by) -> int:
    now = timezone.now()
    batch = plan.batch or batch_create(name=plan.batch_name, k=plan.k, rubric=plan.rubric, created_by=created_by)
    users = _users(plan.parsed.annotators)
    if plan.new_items:
        start = (Item.objects.filter(batch=batch).aggregate(m=Max("position"))["m"] or -1) + 1
        records = [(item_id, plan.parsed.items[item_id]) for item_id in plan.new_items]
        items_insert(batch_id=batch.pk, frame=new_item_frame(records), start_position=start)
    item_pks = dict(
        Item.objects.filter(batch=batch, item_id__in=list(plan.parsed.items)).values_list("item_id", "pk")
    )
    rows = plan.parsed.annotations
    Annotation.objects.bulk_create(
        [
            Annotation(
                item_id=item_pks[r.item_id],
                annotator_id=users[r.annotator],
                flags=r.flags,
                comment=r.comment,
                source=Annotation.Source.IMPORT,
                submitted_at=now,
            )
            for r in rows
        ],
        batch_size=2000,
    )
    saved = dict(
        ((item, user), pk)
        for item, user, pk in Annotation.objects.filter(
            item__batch=batch, source=Annotation.Source.IMPORT, submitted_at=now
        ).values_list("item_id", "annotator_id", "pk")
    )
    Score.objects.bulk_create(
        [
            Score(annotation_id=saved[(item_pks[r.item_id], users[r.annotator])], item_id=item_pks[r.item_id],
                  dimension=dimension, value=value)
            for r in rows
            for dimension, value in r.scores.items()
        ],
        batch_size=5000,
    )
    _mark_assignments_submitted(rows, item_pks, users, now)
    per_item = Counter(item_pks[r.item_id] for r in rows)
    by_count: dict[int, list[int]] = {}
    for pk, count in per_item.items():
        by_count.setdefault(count, []).append(pk)
    for count, pks in by_count.items():
        Item.objects.filter(pk__in=pks).update(n_annotations=F("n_annotations") + count)
    return len(rows)


def _users(names: list[str]) -> dict[str, int]:
    """User ids by name; missing annotators are created in the annotator group with no usable password."""
    User = get_user_model()
    existing = dict(User.objects.filter(username__in=names).values_list("username", "pk"))
    missing = [n for n in names if n not in existing]
    if missing:
        User.objects.bulk_create([User(username=n, password=make_password(None)) for n in missing])
        created = dict(User.objects.filter(username__in=missing).values_list("username", "pk"))
        group, _ = Group.objects.get_or_create(name=ANNOTATOR)
        through = User.groups.through
        through.objects.bulk_create([through(user_id=pk, group_id=group.pk) for pk in created.values()])
        existing.update(created)
    return existing


def _mark_assignments_submitted(rows, item_pks, users, now) -> None:
    """Record each imported pair as a submitted assignment, so the rating page never hands an
    annotator an item they already rated offline."""
    pairs = {(item_pks[r.item_id], users[r.annotator]) for r in rows}
    have = set(
        Assignment.objects.filter(item_id__in={p[0] for p in pairs}, annotator_id__in={p[1] for p in pairs})
        .values_list("item_id", "annotator_id")
    )
    for item_pk, user_pk in have & pairs:  # skipped, expired or released earlier (live leases were refused)
        Assignment.objects.filter(item_id=item_pk, annotator_id=user_pk).update(
            state=Assignment.State.SUBMITTED, finished_at=now
        )
    Assignment.objects.bulk_create(
        [
            Assignment(item_id=i, annotator_id=u, state=Assignment.State.SUBMITTED, leased_at=now,
                       lease_expires_at=now, finished_at=now)
            for i, u in sorted(pairs - have)
        ],
        batch_size=2000,
    )
