"""The Prolific settings: typed readers that stop start-up on a typo, and a token that never leaves
the environment except in the Authorization header."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command

from annotator.env import env_secret, env_url
from annotator.management.commands import prolific_review as command
from annotator.models import ProlificBonus
from tests.annotator.studies.prolific_fake import STUDY, TOKEN, Fake, worker
from tests.factories import make_batch

ROOT = Path(__file__).resolve().parents[3]


def test_the_api_url_defaults_to_prolific(monkeypatch):
    monkeypatch.delenv("PROLIFIC_API_URL", raising=False)
    assert env_url("PROLIFIC_API_URL", "https://api.prolific.com") == "https://api.prolific.com"
    monkeypatch.setenv("PROLIFIC_API_URL", "http://127.0.0.1:8190/")
    assert env_url("PROLIFIC_API_URL", "https://api.prolific.com") == "http://127.0.0.1:8190"


@pytest.mark.parametrize("value", ["api.prolific.com", "ftp://x", "https://", "https://a b", "https://x?y=1"])
def test_a_bad_api_url_is_refused_naming_the_variable(monkeypatch, value):
    monkeypatch.setenv("PROLIFIC_API_URL", value)
    with pytest.raises(ImproperlyConfigured, match=r"^PROLIFIC_API_URL=.* is not a URL"):
        env_url("PROLIFIC_API_URL", "https://api.prolific.com")


def test_a_bad_api_url_stops_start_up():
    env = {k: v for k, v in os.environ.items() if k not in {"DEBUG", "DATABASE_URL"}}
    env.update(SECRET_KEY="x", PROLIFIC_API_URL="api.prolific.com")
    result = subprocess.run(
        [sys.executable, "-c", "import annotator.settings"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode != 0 and "PROLIFIC_API_URL='api.prolific.com' is not a URL" in result.stderr


def test_secrets_are_read_trimmed_and_default_to_empty(monkeypatch):
    monkeypatch.delenv("PROLIFIC_API_TOKEN", raising=False)
    assert env_secret("PROLIFIC_API_TOKEN") == ""
    monkeypatch.setenv("PROLIFIC_API_TOKEN", "  abc \n")
    assert env_secret("PROLIFIC_API_TOKEN") == "abc"


@pytest.mark.django_db
def test_the_token_is_never_logged_printed_or_stored(monkeypatch, caplog):
    batch = make_batch("secret", n_items=3)
    worker(batch, "a" * 24, session="subA")
    fake = Fake()
    fake.add("subA", "a" * 24)
    fake.fail("GET", r"/api/v1/studies/.*", 503)
    monkeypatch.setattr(command, "client_factory", fake.client)
    out, err = StringIO(), StringIO()
    with caplog.at_level(logging.DEBUG):
        call_command(
            "prolific_review",
            batch.name,
            "--study-id",
            STUDY,
            "--approve",
            "--bonus-per-item",
            "0.10",
            stdout=out,
            stderr=err,
        )
    assert fake.paid and TOKEN not in out.getvalue() + err.getvalue() + caplog.text
    assert not any(TOKEN in str(value) for row in ProlificBonus.objects.values() for value in row.values())
