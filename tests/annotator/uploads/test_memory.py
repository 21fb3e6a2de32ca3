"""A worker gives back the heap an upload freed (annotator/uploads/memory.py)."""

import gc
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotator.models import Item
from annotator.uploads import memory
from tests.factories import upload_storage_at

ROOT = Path(__file__).resolve().parents[3]
FILE = "item_id,prompt,response\n" + "".join(f"i{n},Prompt {n},Answer {n}\n" for n in range(30))


@pytest.fixture(autouse=True)
def upload_dir(settings, tmp_path):
    return upload_storage_at(settings, tmp_path / "uploads")


def test_memory_release_calls_malloc_trim(monkeypatch):
    calls = []
    monkeypatch.setattr(memory, "_malloc_trim", lambda: calls.append)
    assert memory.memory_release() is True
    assert calls == [0]


def test_memory_release_is_a_no_op_without_malloc_trim(monkeypatch):
    monkeypatch.setattr(memory, "_malloc_trim", lambda: None)
    assert memory.memory_release() is False


def test_the_upload_preview_and_confirm_release_memory_after_the_view(client, admin_user, monkeypatch):
    released = []
    monkeypatch.setattr(memory, "memory_release", lambda: released.append(True))
    client.force_login(admin_user)
    page = client.post(
        reverse("upload_preview"),
        {"mode": "batch", "name": "b", "k": "3", "file": SimpleUploadedFile("f.csv", FILE.encode())},
    )
    assert page.status_code == 200 and released == [True]
    token = re.search(r'name="token" value="([^"]+)"', page.content.decode()).group(1)
    assert client.post(reverse("upload_confirm"), {"token": token}).status_code == 302
    assert released == [True, True] and Item.objects.count() == 30
    # a file with errors is previewed with them, and releases too
    refused = client.post(
        reverse("upload_preview"),
        {"mode": "batch", "name": "c", "k": "3", "file": SimpleUploadedFile("f.csv", b"x\n1\n")},
    )
    assert refused.status_code == 200 and "is missing" in refused.content.decode()
    assert len(released) == 3


PROBE = """
import json, sys
from annotator.uploads.files.annotation_file import parse_annotation_file
from annotator.uploads.memory import memory_release
from hcs.rubric import Rubric
def rss():
    return int(open("/proc/self/status").read().split("VmRSS:")[1].split()[0]) / 1024
rows = "".join(f"item-{i},Prompt {i} " + "x" * 600 + f",Answer {i},rater{a},4,3,5,5,4,comment {i}\\n"
               for i in range(8000) for a in range(3))
header = ("item_id,prompt,response,annotator,"
          "coherence,relevance,instruction_following,safety_compliance,fluency")
data = (header + ",comment\\n" + rows).encode()
del rows
parsed = parse_annotation_file(data, rubric=Rubric.default(), filename="a.csv")
assert parsed.ok and len(parsed.annotations) == 24000, parsed.errors[:3]
del parsed
before = rss()
memory_release()
print(json.dumps([before, rss()]))
"""


@pytest.mark.skipif(memory._malloc_trim() is None, reason="malloc_trim is glibc's")
def test_parsing_a_file_then_releasing_gives_the_heap_back():
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="tests.settings")
    probe = "import django; django.setup()\n" + PROBE
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    before, after = json.loads(result.stdout.strip().splitlines()[-1])
    assert before - after > 10, (before, after)  # MB


def test_gc_paused_restores_the_collector_as_it_was():
    assert gc.isenabled()
    with memory.gc_paused():
        assert not gc.isenabled()
        with memory.gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer pause still holds
    assert gc.isenabled()
    gc.disable()
    try:
        with memory.gc_paused():
            pass
        assert not gc.isenabled()  # it was off before: left off
    finally:
        gc.enable()


def test_gc_paused_as_a_decorator_restores_after_an_error():
    @memory.gc_paused()
    def failing():
        assert not gc.isenabled()
        raise ValueError("bad file")

    with pytest.raises(ValueError):
        failing()
    assert gc.isenabled()


@pytest.mark.django_db
def test_the_import_services_read_files_with_the_collector_paused(monkeypatch):
    from annotator.uploads.selectors import preview as upload_selectors
    from annotator.uploads.services import annotation_imports, batches
    from annotator.uploads.services import confirm as uploads

    seen = []

    def parse(*args, **kwargs):
        seen.append(gc.isenabled())
        raise LookupError("stop")

    monkeypatch.setattr(annotation_imports, "annotation_import_plan", parse)
    monkeypatch.setattr(batches, "parse_batch_file", parse)
    monkeypatch.setattr(upload_selectors, "batch_upload_preview", parse)
    pending = {"filename": "f.csv", "name": "b", "k": 3}
    calls = [
        lambda: annotation_imports.annotations_import_file(data=b"", filename="f.csv", batch_name="b", k=3),
        lambda: batches.batch_import_file(data=b"", filename="f.csv", name="b", k=3, rubric=None),
        lambda: upload_selectors.pending_upload_preview(pending={"mode": "batch", **pending}, data=b""),
        lambda: uploads.pending_upload_save(pending={"mode": "annotations", **pending}, data=b"", user=None),
    ]
    for call in calls:
        with pytest.raises(LookupError):
            call()
        assert gc.isenabled()
    assert seen == [False, False, False, False]
