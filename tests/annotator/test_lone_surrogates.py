"""A lone surrogate (an escape like ``\\ud800`` without its pair) in a JSONL file: a row error, not a 500."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotator.models import Batch
from tests.factories import upload_storage_at

pytestmark = pytest.mark.django_db

JSONL = (
    '{"item_id": "s-1", "prompt": "Plan a route.", "response": "Route 9."}\n'
    '{"item_id": "s-2", "prompt": "Plan a route.", "response": "Take \\ud800 the bridge."}\n'
)


def test_the_upload_preview_names_the_row(client, admin_user, settings, tmp_path):
    upload_storage_at(settings, tmp_path / "uploads")
    client.force_login(admin_user)
    response = client.post(
        reverse("upload_preview"),
        {
            "mode": "batch",
            "name": "s",
            "k": "3",
            "file": SimpleUploadedFile("items.jsonl", JSONL.encode(), content_type="application/json"),
        },
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert "lone surrogate" in page and "response" in page
    assert 'name="token"' not in page  # nothing to confirm
    assert not Batch.objects.exists()


def test_import_batch_names_the_row(tmp_path):
    path = tmp_path / "items.jsonl"
    path.write_text(JSONL)
    with pytest.raises(CommandError) as refused:
        call_command("import_batch", str(path), "--name", "s", stdout=StringIO())
    assert "lone surrogate" in str(refused.value) and "2" in str(refused.value)
    assert not Batch.objects.exists()


def test_a_key_with_a_lone_surrogate_is_named_escaped(tmp_path):
    path = tmp_path / "items.jsonl"
    path.write_text('{"item_id": "s-1", "prompt": "p", "response": "r", "note\\udfff": "x"}\n')
    with pytest.raises(CommandError) as refused:
        call_command("import_batch", str(path), "--name", "s", stdout=StringIO())
    assert "note\\udfff" in str(refused.value)


def test_a_batch_name_that_is_not_utf8_on_the_command_line_is_refused(tmp_path):
    path = tmp_path / "items.jsonl"
    path.write_text('{"item_id": "s-1", "prompt": "p", "response": "r"}\n')
    # Python hands a non-UTF-8 argument over as lone surrogates (surrogateescape).
    with pytest.raises(CommandError, match="lone surrogate"):
        call_command(
            "import_batch",
            str(path),
            "--name",
            b"week\xff".decode("utf-8", "surrogateescape"),
            stdout=StringIO(),
        )
    assert not Batch.objects.exists()


def test_a_judge_name_with_a_lone_surrogate_is_refused_by_the_service():
    from annotator.judges.services.judges import judge_get_or_create
    from annotator.uploads.files.errors import ImportRefused

    with pytest.raises(ImportRefused, match="lone surrogate"):
        judge_get_or_create(name="judge\udcff")
