"""The invite and sign-in link forms show a password rule's error under the password it is about,
styled as an error; only a mismatch goes under the confirmation."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from annotator.studies.services.links import annotators_add, invite_create
from tests.factories import make_batch

pytestmark = pytest.mark.django_db
CSS = Path(__file__).resolve().parents[3] / "static" / "css" / "app.css"


def field_block(html: str, name: str) -> str:
    """The form's <div> that holds the field ``name``."""
    return next(block for block in re.split(r"<div>\s*<label", html) if f'name="{name}"' in block)


@pytest.fixture
def invite_url():
    _invite, token = invite_create(batches=[make_batch("inv", n_items=1)])
    return reverse("invite", args=[token])


def test_a_weak_password_is_refused_under_the_password_field(invite_url):
    response = Client().post(invite_url, {"username": "bob", "password1": "short", "password2": "short"})
    html = response.content.decode()
    assert response.status_code == 422
    first, confirmation = field_block(html, "password1"), field_block(html, "password2")
    assert 'class="errorlist" id="id_password1_error"' in first and "too short" in first
    assert 'aria-invalid="true"' in first and "id_password1_error" in first
    assert "errorlist" not in confirmation
    assert not get_user_model().objects.filter(username="bob").exists()


def test_a_mismatch_is_refused_under_the_confirmation(invite_url):
    html = (
        Client()
        .post(
            invite_url, {"username": "bob", "password1": "a-Long-pass-9371", "password2": "a-Long-pass-9372"}
        )
        .content.decode()
    )
    assert "errorlist" not in field_block(html, "password1")
    assert "didn’t match" in field_block(html, "password2")


def test_the_sign_in_link_form_does_the_same():
    account = annotators_add(rows=[("carla", "c@example.org")], batch=make_batch("bulk", n_items=1))[0]
    html = (
        Client()
        .post(
            reverse("signin_link", args=[account.token]),
            {"new_password1": "12345678", "new_password2": "12345678"},
        )
        .content.decode()
    )
    assert "entirely numeric" in field_block(html, "new_password1")
    assert "errorlist" not in field_block(html, "new_password2")


def test_form_errors_are_styled_as_errors():
    css = CSS.read_text()
    rule = re.search(r"\.errorlist \{([^}]*)\}", css)
    assert rule and "var(--error)" in rule.group(1) and "var(--error-bg)" in rule.group(1)
