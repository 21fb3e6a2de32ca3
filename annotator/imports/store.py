"""Uploaded files kept on disk between the preview and the confirm step.

A file is named by a random token; the token is only accepted when it has the expected shape,
so it can never name a path outside the upload folder. Files older than a day are removed.
"""

from __future__ import annotations

import re
import secrets
import time
from pathlib import Path

TOKEN = re.compile(r"^[A-Za-z0-9_-]{32}\Z")
MAX_AGE_SECONDS = 24 * 3600


class UploadStore:
    def __init__(self, folder: str | Path):
        self.folder = Path(folder)

    def _path(self, token: str) -> Path | None:
        if not isinstance(token, str) or not TOKEN.match(token):
            return None
        return self.folder / f"{token}.upload"

    def save(self, data: bytes) -> str:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.purge()
        token = secrets.token_urlsafe(24)
        path = self._path(token)
        path.write_bytes(data)
        path.chmod(0o600)
        return token

    def load(self, token: str) -> bytes | None:
        path = self._path(token)
        if path is None or not path.is_file():
            return None
        return path.read_bytes()

    def delete(self, token: str) -> None:
        path = self._path(token)
        if path is not None:
            path.unlink(missing_ok=True)

    def purge(self, max_age: float = MAX_AGE_SECONDS) -> None:
        cutoff = time.time() - max_age
        for path in self.folder.glob("*.upload"):
            try:
                if path.stat().st_mtime < cutoff:
                    path.unlink()
            except FileNotFoundError:
                pass
