"""Accounts: login throttling, password validators, deploy checks."""

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.test import override_settings
from django.urls import reverse

from tests.factories import PASSWORD, make_user

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.django_db
@override_settings(AXES_ENABLED=True, AXES_FAILURE_LIMIT=3)
def test_login_is_throttled_after_repeated_failures(client):
    make_user("ann", role="annotator")
    url = reverse("login")
    for _ in range(2):
        response = client.post(url, {"username": "ann", "password": "wrong"})
        assert response.status_code == 200
        assert "did not match" in response.content.decode()
    response = client.post(url, {"username": "ann", "password": "wrong"})
    assert response.status_code == 429
    assert "Too many failed log-ins" in response.content.decode()
    # Locked out: even the right password is refused now.
    response = client.post(url, {"username": "ann", "password": PASSWORD})
    assert response.status_code == 429
    assert "_auth_user_id" not in client.session


@pytest.mark.django_db
@override_settings(AXES_ENABLED=True)
def test_successful_login_works_with_throttling_on(client):
    make_user("ann", role="annotator")
    response = client.post(reverse("login"), {"username": "ann", "password": PASSWORD})
    assert response.status_code == 302
    assert client.session["_auth_user_id"]


@pytest.mark.parametrize("password", ["short1", "password123", "12345678901", "qwertyuiop"])
def test_weak_passwords_are_refused(password):
    with pytest.raises(ValidationError):
        validate_password(password)


def test_check_deploy_is_clean_under_production_settings():
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DEBUG", "HTTPS_ONLY", "DJANGO_SETTINGS_MODULE", "DJANGO_ALLOW_ASYNC_UNSAFE"}
    }
    env.update(SECRET_KEY=secrets.token_urlsafe(50), ALLOWED_HOSTS="eval.example.org")
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


@pytest.mark.django_db
def test_login_page_has_csrf_protection(client):
    response = client.get(reverse("login"))
    assert 'name="csrfmiddlewaretoken"' in response.content.decode()
