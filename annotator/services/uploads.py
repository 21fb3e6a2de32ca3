"""Saving an upload the admin confirmed, in the request or in the background worker."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from annotator.counted import counted
from annotator.forms.uploads import BATCH
from annotator.imports.batch_file import parse_batch_file
from annotator.memory import gc_paused
from annotator.models import Batch, Job
from annotator.services.annotation_imports import annotations_import_file
from annotator.services.batches import batch_import_file, batch_items_add
from annotator.services.tokens import token_hash
from hcs.rubric import Rubric

ITEMS = "items"


@gc_paused()  # reading a file makes many objects and no cycles
def pending_upload_save(*, pending: dict, data: bytes, user) -> str:
    """Check the file again and save it in one transaction; returns the message for the admin.

    Raises ``FileRefused`` or ``ImportRefused`` (nothing saved) when it does not pass.
    """
    if pending["mode"] == ITEMS:  # items added to an existing batch (the API)
        batch = Batch.objects.get(pk=pending["batch_id"])
        count = batch_items_add(batch=batch, parsed=parse_batch_file(data, filename=pending["filename"]))
        return f"Added {counted(count, 'item', 'items')} to \u201c{batch.name}\u201d."
    rubric = Rubric.from_dict(pending["rubric"]) if pending.get("rubric") else None
    common = {"data": data, "filename": pending["filename"], "k": pending["k"], "created_by": user}
    if pending["mode"] == BATCH:
        batch = batch_import_file(name=pending["name"], rubric=rubric or Rubric.default(), **common)
        items = counted(batch.items.count(), "item", "items")
        return f"Batch \u201c{batch.name}\u201d created with {items}{_gold_saved(batch)}."
    plan = annotations_import_file(batch_name=pending["name"], rubric=rubric, **common)
    return (
        f"Imported {counted(len(plan.parsed.annotations), 'annotation', 'annotations')} into "
        f"\u201c{plan.batch_name}\u201d ({counted(len(plan.new_items), 'new item', 'new items')}, "
        f"{counted(len(plan.new_users), 'new annotator account', 'new annotator accounts')})."
    )


def _gold_saved(batch) -> str:
    """The gold rows saved beside the items, which the confirm button counted as rows too."""
    kinds = dict(batch.gold_items.order_by().values_list("kind").annotate(n=Count("pk")))
    if not kinds:
        return ""
    parts = ", ".join(f"{kinds[k]} {k}" for k in sorted(kinds, key=lambda k: k != "training"))
    return f" and {counted(sum(kinds.values()), 'gold item', 'gold items')} ({parts})"


def confirm_key(token: str) -> str:
    """What a confirm leaves in its job row to be recognised by (a hash: the token itself is the session's)."""
    return token_hash("upload-confirm:" + token)


@transaction.atomic
def upload_confirm_save(*, token: str, pending: dict, data: bytes, user) -> str:
    """:func:`pending_upload_save`, leaving a done upload job in the same transaction: a confirm whose
    reply was lost (the process killed after the commit) is recognised when it is sent again."""
    message = pending_upload_save(pending=pending, data=data, user=user)
    now = timezone.now()
    Job.objects.create(
        kind=Job.UPLOAD,
        created_by=user,
        state=Job.DONE,
        started_at=now,
        finished_at=now,
        params={**pending, "confirm_key": confirm_key(token)},
        message=message,
        label=f"Upload of {pending['filename']} (\u201c{pending['name']}\u201d)",
        step="Saved.",
    )
    return message
