"""Small factories for tests: users with roles, batches with items, gold items, annotations with scores,
a running job."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db.models import F
from django.utils import timezone

from annotator.models import Annotation, Batch, GoldItem, Item, Job, Score
from annotator.rating.services.queue_order import random_key
from annotator.selectors.jobs import this_worker
from hcs.rubric import Rubric

PASSWORD = "correct-horse-battery-staple"


def make_user(username: str, *, role: str = "annotator") -> object:
    """role: 'annotator', 'researcher', 'admin' (staff) or 'none'."""
    User = get_user_model()
    user = User.objects.create_user(username=username, password=PASSWORD, is_staff=(role == "admin"))
    if role in ("annotator", "researcher"):
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


def make_batch(
    name: str = "batch",
    *,
    n_items: int = 5,
    k: int = 3,
    systems: Sequence[str] = ("sys-a",),
    constraints: Sequence[str] = ("avoid tolls", "arrive before 8AM"),
    rubric: Rubric | None = None,
    order_seed: int | None = None,
) -> Batch:
    """``order_seed``: the batch's queue in the random order of that seed, as the batch service makes it;
    None, file order (``queue_rank`` = position)."""
    batch = Batch.objects.create(
        name=name, rubric=(rubric or Rubric.default()).to_dict(), k=k, order_seed=order_seed
    )
    Item.objects.bulk_create(
        Item(
            batch=batch,
            item_id=f"{name}-{i}",
            prompt_id=f"p{i // len(systems)}",
            position=i,
            queue_rank=i if order_seed is None else random_key(order_seed, f"{name}-{i}"),
            prompt=f"Plan a route to the airport number {i // len(systems)} avoiding tolls.",
            response=f"Take the coastal road (answer {i}).",
            system_id=systems[i % len(systems)],
            constraints=list(constraints),
        )
        for i in range(n_items)
    )
    return batch


def make_gold_items(
    batch: Batch,
    kind: str,
    n: int,
    *,
    item_id: str = "{kind}-{n}",
    prompt: str = "p",
    start: int = 0,
    **fields,
) -> list[GoldItem]:
    """``n`` gold items of ``kind`` (training or check) at positions ``start``, ``start + 1``, ...;
    ``item_id`` and ``prompt`` are formatted with ``n`` (0, 1, ...) and ``kind``; ``fields`` (response,
    scores, flags, explanation, tolerance) are every item's."""
    return [
        GoldItem.objects.create(
            batch=batch,
            item_id=item_id.format(n=i, kind=kind),
            kind=kind,
            position=start + i,
            prompt=prompt.format(n=i, kind=kind),
            **fields,
        )
        for i in range(n)
    ]


def make_annotation(
    item: Item,
    annotator,
    scores: Mapping[str, int],
    *,
    flags: Sequence[str] = (),
    comment: str = "",
    submitted_at=None,
    source: str = Annotation.Source.IMPORT,
) -> Annotation:
    """An annotation as an offline import saves it; ``source=Annotation.Source.WEB`` for one given through
    the queue (no assignment is made either way)."""
    annotation = Annotation.objects.create(
        item=item,
        annotator=annotator,
        flags=list(flags),
        comment=comment,
        submitted_at=submitted_at or timezone.now(),
        source=source,
    )
    Score.objects.bulk_create(
        Score(annotation=annotation, item=item, dimension=d, value=v)
        for d, v in scores.items()
        if v is not None
    )
    Item.objects.filter(pk=item.pk).update(n_annotations=F("n_annotations") + 1)
    return annotation


def upload_storage_at(settings, folder) -> Path:
    """Point the storage of uploads waiting for confirmation (``STORAGES["uploads"]``) at ``folder``."""
    settings.STORAGES = {
        **settings.STORAGES,
        "uploads": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": folder},
        },
    }
    return Path(folder)


def in_queue_order(batch: Batch) -> list[Item]:
    """The batch's items in the order its queue hands them out to a fresh annotator."""
    return list(batch.items.order_by("-queue_first", "queue_rank", "position"))


def queue_places(batch: Batch) -> dict[str, int]:
    """Item id → its place in the batch's queue for items at the same progress: the items put first
    (``queue_first``, highest first), then the batch's order (``queue_rank``); in that order."""
    ids = Item.objects.filter(batch=batch).order_by("-queue_first", "queue_rank", "position")
    return {item_id: place for place, item_id in enumerate(ids.values_list("item_id", flat=True))}


def make_running_job(owner, *, kind: str = Job.JUDGE_RUN, label: str = "a run", **fields) -> Job:
    """A job running on this process's worker, started and beating now (``fields``: progress, ...)."""
    now = timezone.now()
    return Job.objects.create(
        kind=kind,
        created_by=owner,
        label=label,
        params={},
        state=Job.RUNNING,
        worker=this_worker(),
        started_at=now,
        heartbeat_at=now,
        **fields,
    )
