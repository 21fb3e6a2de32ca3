"""Django on a fresh SQLite file, for benchmarks that run as plain scripts."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def django_on_fresh_sqlite(path: Path) -> None:
    """Delete ``path`` (and its WAL files), point the settings at it and set Django up; migrate next."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    os.environ.update(
        DATABASE_URL=f"sqlite:///{path}", DJANGO_SETTINGS_MODULE="annotator.settings", DEBUG="1"
    )
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
