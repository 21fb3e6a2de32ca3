"""--push-to-hub against a local stub of the Hub's HTTP API (no network): huggingface_hub makes the
repository, validates the card's YAML and commits every file of the folder."""

from __future__ import annotations

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests.annotator.hf_support import study_batch

pytestmark = pytest.mark.django_db
PORTS = range(8180, 8190)  # the ports local test servers may use
REPO = "lab/route-study"


class StubHub(BaseHTTPRequestHandler):
    """The four calls huggingface_hub makes to publish a folder; every file is sent inline ("regular")."""

    calls: list = []
    files: dict = {}
    fail_commit = False

    def log_message(self, *args):
        pass

    def _answer(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.calls.append(("GET", self.path, self.headers.get("Authorization")))
        self._answer(404, {"error": "not in the stub"})

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.calls.append(("POST", self.path, self.headers.get("Authorization")))
        base = f"http://{self.server.server_address[0]}:{self.server.server_address[1]}"
        if self.path == "/api/repos/create":
            request = json.loads(body)
            self.calls.append(("create", request))
            return self._answer(200, {"url": f"{base}/datasets/{REPO}", "name": REPO})
        if self.path == "/api/validate-yaml":
            return self._answer(200, {"errors": [], "warnings": []})
        if self.path == f"/api/datasets/{REPO}/preupload/main":
            files = json.loads(body)["files"]
            return self._answer(
                200,
                {
                    "files": [
                        {"path": f["path"], "uploadMode": "regular", "shouldIgnore": False} for f in files
                    ]
                },
            )
        if self.path == f"/api/datasets/{REPO}/commit/main":
            if self.fail_commit:
                return self._answer(403, {"error": "You don't have the rights to create a commit here"})
            for line in body.decode().splitlines():
                entry = json.loads(line)
                if entry["key"] == "file":
                    self.files[entry["value"]["path"]] = base64.b64decode(entry["value"]["content"])
            return self._answer(
                200,
                {
                    "commitUrl": f"{base}/datasets/{REPO}/commit/{'a' * 40}",
                    "commitOid": "a" * 40,
                    "success": True,
                },
            )
        return self._answer(404, {"error": "not in the stub"})


@pytest.fixture
def hub(monkeypatch):
    server = None
    for port in PORTS:
        try:
            server = ThreadingHTTPServer(("127.0.0.1", port), StubHub)
            break
        except OSError:
            continue
    if server is None:
        pytest.fail(f"no free port in {PORTS.start}-{PORTS.stop - 1} for the stub Hub")
    StubHub.calls, StubHub.files, StubHub.fail_commit = [], {}, False
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.setenv("HF_TOKEN", "hf_stub_token_123")
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    yield StubHub
    server.shutdown()
    server.server_close()


def test_push_to_hub_uploads_every_file_of_the_folder(hub, tmp_path):
    batch, _ = study_batch()
    err = StringIO()
    call_command(
        "export_report",
        batch.name,
        "--format",
        "hf",
        "--out",
        str(tmp_path / "ds"),
        "--push-to-hub",
        REPO,
        stderr=err,
    )
    local = {
        p.relative_to(tmp_path / "ds").as_posix(): p.read_bytes()
        for p in (tmp_path / "ds").rglob("*")
        if p.is_file()
    }
    assert set(local) == {
        "README.md",
        "data/ratings/train.parquet",
        "data/items/train.parquet",
        "data/judge_scores/train.parquet",
        "data/pairwise_verdicts/train.parquet",
    }
    assert hub.files == local  # byte for byte
    [created] = [c[1] for c in hub.calls if c[0] == "create"]
    assert (created["organization"], created["name"], created["type"]) == ("lab", "route-study", "dataset")
    assert created.get("private") is True or created.get("visibility") == "private", created  # made private
    assert all(c[2] == "Bearer hf_stub_token_123" for c in hub.calls if c[0] in ("GET", "POST"))
    assert f"/datasets/{REPO}" in err.getvalue()


def test_a_refused_upload_says_so_and_keeps_the_folder(hub, tmp_path):
    hub.fail_commit = True
    batch, _ = study_batch()
    with pytest.raises(CommandError, match="upload to lab/route-study failed") as caught:
        call_command(
            "export_report",
            batch.name,
            "--format",
            "hf",
            "--out",
            str(tmp_path / "ds"),
            "--push-to-hub",
            REPO,
            stderr=StringIO(),
        )
    assert "hf_stub_token_123" not in str(caught.value)
    assert (tmp_path / "ds" / "README.md").is_file()
