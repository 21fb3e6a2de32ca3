"""Uploaded files kept between the preview and the confirm step, in Django's storage ``uploads``.

The storage is ``STORAGES["uploads"]``: a folder on this server by default
(``ANNOTATOR_UPLOAD_DIR``), or any Django storage backend such as django-storages' S3 by setting
(``ANNOTATOR_UPLOAD_STORAGE``), so several app servers behind a load balancer need no shared disk.
A file is named by a random token; the token is only accepted when it has the expected shape, so it
can never name anything outside the store. Files older than a day are removed.
"""

from __future__ import annotations

import re
import secrets
from datetime import timedelta

from django.core.files.base import ContentFile
from django.core.files.storage import Storage, storages
from django.utils import timezone

TOKEN = re.compile(r"^[A-Za-z0-9_-]{32}\Z")
MAX_AGE_SECONDS = 24 * 3600
SUFFIX = ".upload"
STORAGE = "uploads"  # the key in settings.STORAGES


class UploadStore:
    def __init__(self, storage: Storage | None = None):
        self.storage = storage if storage is not None else storages[STORAGE]

    def _name(self, token: str) -> str | None:
        if not isinstance(token, str) or not TOKEN.match(token):
            return None
        return f"{token}{SUFFIX}"

    def save(self, data: bytes) -> str:
        self.purge()
        while True:
            token = secrets.token_urlsafe(24)
            name = self._name(token)
            if not self.storage.exists(name):
                break
        self.storage.save(name, ContentFile(data))
        return token

    def load(self, token: str) -> bytes | None:
        name = self._name(token)
        if name is None or not self.storage.exists(name):
            return None
        with self.storage.open(name, "rb") as fh:
            return fh.read()

    def delete(self, token: str) -> None:
        name = self._name(token)
        if name is not None:
            self.storage.delete(name)

    def purge(self, max_age: float = MAX_AGE_SECONDS) -> None:
        cutoff = timezone.now() - timedelta(seconds=max_age)
        try:
            _, files = self.storage.listdir("")
        except FileNotFoundError:  # nothing stored yet
            return
        for name in files:
            if not (name.endswith(SUFFIX) and TOKEN.match(name[: -len(SUFFIX)])):
                continue
            try:
                if self.storage.get_modified_time(name) < cutoff:
                    self.storage.delete(name)
            except FileNotFoundError:  # removed meanwhile by another server
                pass
