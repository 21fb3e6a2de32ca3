"""Back up a whole installation to a folder of JSON Lines files and restore it into an empty one.

Every model of this app (but the stored reports) plus users and groups is written, one ``<app>.<model>.jsonl`` file per
model, streamed row by row so memory stays flat. Primary keys are kept, so reports computed after
a restore are identical; users and permissions are referred to by natural key.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

from django.apps import apps
from django.contrib.auth import get_user_model
from django.core import serializers
from django.core.management.color import no_style
from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, transaction

from annotator.services.bulk import analyze_after_commit

MANIFEST = "manifest.json"
FORMAT_VERSION = 1


class ExactJSONEncoder(DjangoJSONEncoder):
    """Django's encoder keeps times to the millisecond only; a backup keeps every microsecond
    (submission times order the annotations that Fleiss' kappa uses)."""

    def default(self, o):
        if isinstance(o, (datetime.datetime, datetime.time)) and o.microsecond:
            text = o.isoformat()
            return text[:-6] + "Z" if text.endswith("+00:00") else text
        return super().default(o)


class RestoreError(Exception):
    """The backup cannot be restored here; nothing was changed."""


def _backup_models() -> list:
    models = [apps.get_model("auth", "Group"), get_user_model()]
    # Stored reports are derived (recomputed on the first view) and pickled: never written out, never
    # read back from a file.
    models += [
        m for m in apps.get_app_config("annotator").get_models() if m._meta.model_name != "reportcache"
    ]
    return serializers.sort_dependencies([(None, models)], allow_cycles=True)


def installation_export(*, out_dir: Path) -> dict[str, int]:
    """Write every row to ``out_dir``; returns rows written per model."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    order: list[str] = []
    with transaction.atomic():  # one consistent snapshot
        for model in _backup_models():
            label = model._meta.label_lower
            queryset = model._default_manager.order_by("pk")
            with (out_dir / f"{label}.jsonl").open("w", encoding="utf-8") as stream:
                serializers.serialize(
                    "jsonl",
                    queryset.iterator(chunk_size=2000),
                    stream=stream,
                    use_natural_foreign_keys=True,
                    cls=ExactJSONEncoder,
                )
            counts[label] = queryset.count()
            order.append(label)
    manifest = {"format_version": FORMAT_VERSION, "order": order, "counts": counts}
    (out_dir / MANIFEST).write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    return counts


@transaction.atomic
def installation_import(*, in_dir: Path) -> dict[str, int]:
    """Load a backup written by :func:`installation_export` into an installation with no data."""
    in_dir = Path(in_dir)
    try:
        manifest = json.loads((in_dir / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise RestoreError(f"{in_dir} has no {MANIFEST}: it is not a backup made by export_all") from exc
    if manifest.get("format_version") != FORMAT_VERSION:
        raise RestoreError(f"backup format {manifest.get('format_version')!r} is not {FORMAT_VERSION}")
    if get_user_model().objects.exists() or apps.get_model("annotator", "Batch").objects.exists():
        raise RestoreError("this installation already has users or batches; restore into an empty database")
    # Migrations create the role groups; the backup brings its own, with their original keys.
    apps.get_model("auth", "Group").objects.all().delete()
    counts: dict[str, int] = {}
    models = []
    for label in manifest["order"]:
        model = apps.get_model(label)
        models.append(model)
        path = in_dir / f"{label}.jsonl"
        if not path.exists():
            raise RestoreError(f"{path.name} is missing from the backup")
        n = 0
        with path.open(encoding="utf-8") as stream:
            for obj in serializers.deserialize("jsonl", stream, handle_forward_references=True):
                _fill_assignment_batch(obj.object)
                obj.save()
                n += 1
        if n != manifest["counts"].get(label, n):
            raise RestoreError(f"{path.name} holds {n} rows, the manifest says {manifest['counts'][label]}")
        counts[label] = n
    _reset_sequences(models)
    analyze_after_commit(*models)  # a restored database starts with no planner statistics
    return counts


def _fill_assignment_batch(instance) -> None:
    """A backup made before assignments kept their item's batch has none: take the item's (the
    items are restored before the assignments)."""
    Assignment = apps.get_model("annotator", "Assignment")
    if isinstance(instance, Assignment) and instance.batch_id is None:
        instance.batch_id = (
            apps.get_model("annotator", "Item")
            .objects.values_list("batch_id", flat=True)
            .get(pk=instance.item_id)
        )


def _reset_sequences(models: list) -> None:
    statements = connection.ops.sequence_reset_sql(no_style(), models)
    if statements:
        with connection.cursor() as cursor:
            for sql in statements:
                cursor.execute(sql)
