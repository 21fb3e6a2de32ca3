"""Importing annotations made offline: batch, items, users, annotations and scores in one transaction."""

from __future__ import annotations

import json
from collections import Counter
from functools import cache

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import Group
from django.db import IntegrityError, connection, transaction
from django.db.models import F
from django.utils import timezone

from annotator.models import Annotation, Assignment, Batch, Item, Score
from annotator.rating import hooks
from annotator.roles import ANNOTATOR
from annotator.services.bulk import analyze_after_commit, ids_reserve, rows_insert
from annotator.services.integrity import integrity_message
from annotator.uploads.files.annotation_file import new_item_frame
from annotator.uploads.files.errors import ImportRefused
from annotator.uploads.memory import gc_paused
from annotator.uploads.selectors.plans import AnnotationImportPlan, annotation_import_plan
from annotator.uploads.services.batches import batch_create
from annotator.uploads.services.items import items_insert, next_position
from hcs.rubric import Rubric


@gc_paused()  # reading a file makes many objects and no cycles
@transaction.atomic
def annotations_import_file(
    *,
    data: bytes,
    filename: str,
    batch_name: str,
    k: int | None = None,
    rubric: Rubric | None = None,
    created_by=None,
    labelled_at_random: bool = False,
) -> AnnotationImportPlan:
    """Check the file against the database and save everything, or raise ``ImportRefused``.

    The checks run inside the transaction, so what is saved is what was checked.
    """
    plan = annotation_import_plan(data=data, filename=filename, batch_name=batch_name, k=k, rubric=rubric)
    annotations_import(plan=plan, created_by=created_by, labelled_at_random=labelled_at_random)
    return plan


@transaction.atomic
def annotations_import(
    *, plan: AnnotationImportPlan, created_by=None, labelled_at_random: bool = False
) -> int:
    """Carry out a checked plan; returns the number of annotations saved.

    ``labelled_at_random``: the importer declares the file's items a random sample of the batch. The batch
    keeps the declaration of its latest import, so one import without it makes its offline labels count as
    not random again (``annotator.judges.selectors.sample``)."""
    if plan.errors:
        raise ImportRefused(plan.errors)
    try:
        with transaction.atomic():
            return _write(plan=plan, created_by=created_by, labelled_at_random=labelled_at_random)
    except IntegrityError as exc:
        raise ImportRefused([integrity_message(exc, RACES)]) from None


# The uniqueness races between the checks and the insert: someone rated (or was just given) one of
# these items in the browser. Any other integrity error is reported for what it is.
RACES = {
    "annotation_one_per_item_annotator": (
        "The batch changed while the file was being saved (an annotation for one of these item and "
        "annotator pairs was just submitted); nothing was saved. Upload the file again to see which."
    ),
    "assignment_once_per_item_annotator": (
        "The batch changed while the file was being saved (one of these items was just given to its "
        "annotator in the browser); nothing was saved. Upload the file again to see which."
    ),
}


def _write(*, plan: AnnotationImportPlan, created_by, labelled_at_random: bool) -> int:
    now = timezone.now()
    batch = plan.batch or batch_create(
        name=plan.batch_name, k=plan.k, rubric=plan.rubric, created_by=created_by
    )
    Batch.objects.filter(pk=batch.pk).update(labels_declared_random=labelled_at_random)
    users = _users(plan.parsed.annotators)
    rows = plan.parsed.annotations
    per_item = Counter(r.item_id for r in rows)
    item_pks = dict(plan.existing_items)
    if plan.new_items:
        # New items are written with their ids and their annotation count: no read-back, no update.
        ids = ids_reserve(model=Item, count=len(plan.new_items))
        item_pks.update(zip(plan.new_items, ids, strict=True))
        frame = new_item_frame([(item_id, plan.parsed.items[item_id]) for item_id in plan.new_items])
        frame["id"] = ids
        frame["n_annotations"] = [per_item[item_id] for item_id in plan.new_items]
        items_insert(batch_id=batch.pk, frame=frame, start_position=next_position(batch_id=batch.pk))
    pairs = [(item_pks[r.item_id], users[r.annotator]) for r in rows]
    annotation_ids = ids_reserve(model=Annotation, count=len(rows))
    as_json = cache(lambda values: json.dumps(list(values)))  # a file repeats a few flag sets
    rows_insert(
        model=Annotation,
        fields=("id", "item", "annotator", "flags", "comment", "constraints_met"),
        rows=(
            (pk, item, user, as_json(tuple(r.flags)), r.comment, as_json(tuple(r.constraints_met)))
            for pk, (item, user), r in zip(annotation_ids, pairs, rows, strict=True)
        ),
        constants={"source": Annotation.Source.IMPORT, "submitted_at": now, "updated_at": now},
    )
    rows_insert(
        model=Score,
        fields=("annotation", "item", "dimension", "value"),
        rows=(
            (pk, item, dimension, value)
            for pk, (item, _), r in zip(annotation_ids, pairs, rows, strict=True)
            for dimension, value in r.scores.items()
        ),
    )
    _mark_assignments_submitted(batch, pairs, now, new_batch=plan.batch is None)
    _count_annotations(plan.existing_items, per_item)
    analyze_after_commit(Item, Annotation, Score, Assignment)
    if plan.batch is not None:  # a batch made by this import is no stream's and no study's yet
        hooks.labels_changed(batch=batch, item_ids=sorted({item for item, _ in pairs}))
    return len(rows)


def _count_annotations(existing_items: dict[str, int], per_item: Counter) -> None:
    """Add the imported annotations to the counts of the items that were already in the batch: one
    UPDATE per distinct count (and per chunk of ids on a database that limits query parameters)."""
    by_count: dict[int, list[int]] = {}
    for item_id, pk in existing_items.items():
        by_count.setdefault(per_item[item_id], []).append(pk)
    limit = connection.features.max_query_params  # None: no limit
    for count, pks in by_count.items():
        step = len(pks) if limit is None else limit - 1
        for start in range(0, len(pks), step):
            Item.objects.filter(pk__in=pks[start : start + step]).update(
                n_annotations=F("n_annotations") + count
            )


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


def _mark_assignments_submitted(batch, pairs: list[tuple[int, int]], now, *, new_batch: bool) -> None:
    """Record each imported (item, annotator) pair as a submitted assignment, so the rating page
    never hands an annotator an item they already rated offline."""
    wanted = set(pairs)
    have = (
        set()
        if new_batch
        else set(
            Assignment.objects.filter(batch=batch, annotator_id__in={user for _, user in wanted}).values_list(
                "item_id", "annotator_id"
            )
        )
        & wanted
    )
    for item_pk, user_pk in have:  # skipped, expired or released earlier (live leases were refused)
        Assignment.objects.filter(item_id=item_pk, annotator_id=user_pk).update(
            state=Assignment.State.SUBMITTED, finished_at=now
        )
    rows_insert(
        model=Assignment,
        fields=("item", "annotator"),
        rows=sorted(wanted - have),
        constants={
            "batch": batch.pk,
            "state": Assignment.State.SUBMITTED,
            "leased_at": now,
            "lease_expires_at": now,
            "finished_at": now,
        },
    )
