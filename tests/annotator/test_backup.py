"""export_all → empty database → import_all gives back the same installation."""

import json
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.utils import timezone

from annotator.models import AnnotationRevision, Assignment, Batch
from tests.factories import make_annotation, make_batch, make_user

pytestmark = pytest.mark.django_db

SCORES = {"coherence": 4, "relevance": 5, "instruction_following": 2, "safety_compliance": 3, "fluency": 5}


def _populate():
    users = [make_user(f"ann{i}") for i in range(3)]
    make_user("boss", role="admin")
    batch = make_batch("study", n_items=4, systems=("a", "b"))
    batch.annotators.add(users[0])
    for item in batch.items.all():
        for user in users:
            make_annotation(item, user, SCORES, flags=["ignores_hard_constraint"], comment="<b>x</b>")
    annotation = batch.items.first().annotations.first()
    AnnotationRevision.objects.create(
        annotation=annotation,
        changed_by=users[0],
        old_scores={"coherence": 1},
        old_flags=[],
        old_comment="was",
    )
    now = timezone.now()
    Assignment.objects.create(
        item=batch.items.last(), annotator=users[1], leased_at=now, lease_expires_at=now, state="submitted"
    )


def _wipe():
    Batch.objects.all().delete()
    get_user_model().objects.all().delete()


def _files(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.jsonl"))}


def test_round_trip_into_an_empty_database(tmp_path):
    _populate()
    call_command("export_all", out=tmp_path / "one")
    first = _files(tmp_path / "one")
    assert '"annotator.score"' in first["annotator.score.jsonl"]
    assert first["annotator.score.jsonl"].count("\n") == 4 * 3 * 5
    _wipe()
    call_command("import_all", tmp_path / "one")
    call_command("export_all", out=tmp_path / "two")
    assert _files(tmp_path / "two") == first
    # New rows after a restore get fresh keys (sequences were reset on PostgreSQL).
    make_batch("after-restore", n_items=1)


def test_a_backup_from_before_assignments_kept_their_batch_restores_it_from_the_items(tmp_path):
    _populate()
    call_command("export_all", out=tmp_path)
    expected = sorted(Assignment.objects.values_list("item_id", "batch_id"))
    path = tmp_path / "annotator.assignment.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for row in rows:
        del row["fields"]["batch"]  # as written before the field existed
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    _wipe()
    call_command("import_all", tmp_path)
    assert expected and sorted(Assignment.objects.values_list("item_id", "batch_id")) == expected


def test_restore_refuses_a_non_empty_installation(tmp_path):
    _populate()
    call_command("export_all", out=tmp_path)
    n = Batch.objects.count()
    with pytest.raises(CommandError, match="restore into an empty database"):
        call_command("import_all", tmp_path)
    assert Batch.objects.count() == n


def test_restore_refuses_a_folder_that_is_not_a_backup(tmp_path):
    with pytest.raises(CommandError, match="not a backup made by export_all"):
        call_command("import_all", tmp_path)
