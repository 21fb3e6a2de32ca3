"""Settings come from the environment and refuse unsafe combinations."""

import json
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
    return subprocess.run(
        [sys.executable, "-c", code], check=False, cwd=ROOT, env=clean, capture_output=True, text=True
    )


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
    assert result.stdout.split()[0] == "annotator.pgbackend"  # Django's, with a deadline on each call


def _database_options(**env: str) -> dict:
    clean = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG", "DATABASE_URL"}}
    clean.update({"SECRET_KEY": "x", "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/test", **env})
    code = (
        "import json, annotator.settings as s; "
        "print(json.dumps([s.DATABASES['default']['OPTIONS'], s.DB_QUERY_DEADLINE_S]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], check=True, cwd=ROOT, env=clean, capture_output=True, text=True
    )
    return json.loads(result.stdout)


def test_postgresql_connections_time_out_and_keep_alive():
    options, deadline = _database_options()
    assert options["connect_timeout"] == 5 and options["keepalives"] == 1
    assert options["keepalives_idle"] == 30 and options["tcp_user_timeout"] == 30_000
    assert "options" not in options and deadline == 0  # a command or the worker: no statement timeout


def test_a_web_process_bounds_each_statement():
    options, deadline = _database_options(ANNOTATOR_WEB_PROCESS="1")
    assert options["options"] == "-c statement_timeout=30000" and deadline == 35
    options, deadline = _database_options(
        ANNOTATOR_WEB_PROCESS="1", DB_STATEMENT_TIMEOUT_S="0", DB_CONNECT_TIMEOUT_S="2"
    )
    assert "options" not in options and deadline == 0 and options["connect_timeout"] == 2
    _, deadline = _database_options(ANNOTATOR_WEB_PROCESS="1", DB_QUERY_DEADLINE_S="9")
    assert deadline == 9


def test_gunicorn_marks_its_processes_as_web():
    clean = {k: v for k, v in os.environ.items() if k not in {"ANNOTATOR_WEB_PROCESS", "DATABASE_URL"}}
    code = "import annotator.wsgi; from django.conf import settings; print(settings.WEB_PROCESS)"
    result = subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        cwd=ROOT,
        env={**clean, "SECRET_KEY": "x"},
        capture_output=True,
        text=True,
    )
    assert result.stdout.strip() == "True"


def test_sqlite_uses_immediate_transactions_and_a_busy_timeout():
    db = settings.DATABASES["default"]
    if db["ENGINE"] != "django.db.backends.sqlite3":
        pytest.skip("DATABASE_URL names PostgreSQL; the SQLite options do not apply")
    assert db["OPTIONS"]["transaction_mode"] == "IMMEDIATE"
    assert db["OPTIONS"]["timeout"] >= 5


def test_app_settings_have_defaults():
    assert settings.ANNOTATOR_LEASE_MINUTES == 30
    assert settings.ANNOTATOR_UPLOAD_MAX_BYTES == 50 * 1024 * 1024


# Settings are read strictly: a typo stops start-up instead of switching a protection off.
def test_a_mistyped_boolean_stops_start_up_naming_the_variable_and_the_accepted_values():
    result = _load_settings(SECRET_KEY="x", HTTPS_ONLY="O")
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert "HTTPS_ONLY='O' is not a boolean" in result.stderr
    assert "1/0, true/false, yes/no or on/off" in result.stderr


@pytest.mark.parametrize("name", ["DEBUG", "HTTPS_ONLY", "BEHIND_TLS_PROXY"])
@pytest.mark.parametrize("value", ["O", "enabled", "2", "tru", "y"])
def test_env_bool_refuses_anything_but_the_documented_values(monkeypatch, name, value):
    from django.core.exceptions import ImproperlyConfigured

    from annotator.env import env_bool

    monkeypatch.setenv(name, value)
    with pytest.raises(
        ImproperlyConfigured, match=rf"^{name}='{value}' is not a boolean; accepted values: 1/0"
    ):
        env_bool(name)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1", True),
        ("TRUE", True),
        ("Yes", True),
        ("on", True),
        (" true ", True),
        ("0", False),
        ("False", False),
        ("NO", False),
        ("off", False),
    ],
)
def test_env_bool_reads_every_documented_value_in_any_case(monkeypatch, value, expected):
    from annotator.env import env_bool

    monkeypatch.setenv("HCS_TEST_FLAG", value)
    assert env_bool("HCS_TEST_FLAG", default=not expected) is expected


def test_unset_or_blank_settings_take_their_default(monkeypatch):
    from annotator.env import env_bool, env_int

    monkeypatch.delenv("HCS_TEST_FLAG", raising=False)
    assert env_bool("HCS_TEST_FLAG", default=True) is True
    monkeypatch.setenv("HCS_TEST_FLAG", "  ")
    assert env_bool("HCS_TEST_FLAG", default=True) is True
    assert env_int("HCS_TEST_FLAG", 7) == 7


@pytest.mark.parametrize("value", ["3.5", "30m", "1e3", "ten", "٣", "0x10"])
def test_env_int_refuses_what_is_not_a_whole_number(monkeypatch, value):
    from django.core.exceptions import ImproperlyConfigured

    from annotator.env import env_int

    monkeypatch.setenv("ANNOTATOR_LEASE_MINUTES", value)
    with pytest.raises(
        ImproperlyConfigured,
        match=r"^ANNOTATOR_LEASE_MINUTES=.* is not a whole number; accepted "
        r"values: whole numbers from 1 up\.$",
    ):
        env_int("ANNOTATOR_LEASE_MINUTES", 30, minimum=1)


def test_env_int_refuses_a_number_below_its_minimum(monkeypatch):
    from django.core.exceptions import ImproperlyConfigured

    from annotator.env import env_int

    monkeypatch.setenv("ANNOTATOR_UPLOAD_MAX_MB", "0")
    with pytest.raises(ImproperlyConfigured, match=r"ANNOTATOR_UPLOAD_MAX_MB='0' is below 1"):
        env_int("ANNOTATOR_UPLOAD_MAX_MB", 50, minimum=1)
    monkeypatch.setenv("ANNOTATOR_UPLOAD_MAX_MB", " 12 ")
    assert env_int("ANNOTATOR_UPLOAD_MAX_MB", 50, minimum=1) == 12


def test_a_mistyped_whole_number_stops_start_up():
    result = _load_settings(SECRET_KEY="x", ANNOTATOR_LEASE_MINUTES="30min")
    assert result.returncode != 0
    assert "ANNOTATOR_LEASE_MINUTES='30min' is not a whole number" in result.stderr


@pytest.mark.parametrize("value", ["120", "0/min", "10/fortnight", "ten/min", "1.5/s", "120/MIN "])
def test_env_rate_refuses_what_is_not_a_rate(monkeypatch, value):
    from django.core.exceptions import ImproperlyConfigured

    from annotator.env import env_rate

    monkeypatch.setenv("ANNOTATOR_API_RATE", value)
    with pytest.raises(
        ImproperlyConfigured, match=r"^ANNOTATOR_API_RATE=.* is not a rate; accepted values: N/unit"
    ):
        env_rate("ANNOTATOR_API_RATE", "120/min")


@pytest.mark.parametrize("value", ["1/s", "120/min", "5000/hour", "100000/day"])
def test_env_rate_reads_rates_the_throttle_understands(monkeypatch, value):
    from ninja.throttling import SimpleRateThrottle

    from annotator.env import env_rate

    monkeypatch.setenv("ANNOTATOR_API_RATE", value)
    rate = env_rate("ANNOTATOR_API_RATE", "120/min")
    count, seconds = SimpleRateThrottle(rate).parse_rate(rate)
    assert (rate, count) == (value, int(value.split("/")[0])) and seconds in (1, 60, 3600, 86400)


def test_upload_storage_is_chosen_by_setting():
    storage = "django.core.files.storage.InMemoryStorage"
    ok = _load_settings(
        DEBUG="1", ANNOTATOR_UPLOAD_STORAGE=storage, ANNOTATOR_UPLOAD_STORAGE_OPTIONS='{"location": "x"}'
    )
    assert ok.returncode == 0, ok.stderr
    bad = _load_settings(
        DEBUG="1", ANNOTATOR_UPLOAD_STORAGE=storage, ANNOTATOR_UPLOAD_STORAGE_OPTIONS="bucket=x"
    )
    assert bad.returncode != 0 and "ANNOTATOR_UPLOAD_STORAGE_OPTIONS must be a JSON object" in bad.stderr
    default = settings.STORAGES["uploads"]
    assert default["BACKEND"] == "django.core.files.storage.FileSystemStorage"
    assert default["OPTIONS"]["file_permissions_mode"] == 0o600
