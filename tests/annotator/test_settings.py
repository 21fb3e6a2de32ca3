"""Settings come from the environment and refuse unsafe combinations."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]


def _load_settings(**env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG", "DATABASE_URL"}}
    clean.update(env)
    code = "import annotator.settings as s; print(s.DATABASES['default']['ENGINE'], s.DEBUG)"
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=clean, capture_output=True, text=True)


def test_refuses_to_start_without_secret_key_when_debug_is_off():
    result = _load_settings(DEBUG="0")
    assert result.returncode != 0
    assert "SECRET_KEY is not set" in result.stderr


def test_debug_runs_without_a_key_on_sqlite_by_default():
    result = _load_settings(DEBUG="1")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["django.db.backends.sqlite3", "True"]


def test_database_url_selects_postgresql():
    result = _load_settings(SECRET_KEY="x", DATABASE_URL="postgres://postgres@127.0.0.1:5432/test")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[0] == "django.db.backends.postgresql"


def test_sqlite_uses_immediate_transactions_and_a_busy_timeout():
    db = settings.DATABASES["default"]
    if db["ENGINE"] != "django.db.backends.sqlite3":
        pytest.skip("DATABASE_URL names PostgreSQL; the SQLite options do not apply")
    assert db["OPTIONS"]["transaction_mode"] == "IMMEDIATE"
    assert db["OPTIONS"]["timeout"] >= 5


def test_app_settings_have_defaults():
    assert settings.ANNOTATOR_LEASE_MINUTES == 30
    assert settings.ANNOTATOR_UPLOAD_MAX_BYTES == 50 * 1024 * 1024
