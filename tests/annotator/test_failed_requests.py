"""A request that fails tells the person what happened and what to do, never a bare status line:
a lost database while the session is written is the 503 page, and a session ended meanwhile says so."""

from __future__ import annotations

from unittest import mock

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import OperationalError
from django.test import Client
from django.urls import reverse

from annotator.models import UserSession
from annotator.uploads import views as uploads
from tests.factories import make_user, upload_storage_at

pytestmark = pytest.mark.django_db

CSV = b"item_id,prompt,response,system_id\nr1,Plan a route.,Route 9.,sys-a\n"


@pytest.fixture
def admin(settings, tmp_path):
    upload_storage_at(settings, tmp_path / "uploads")
    client = Client(raise_request_exception=False)
    client.force_login(make_user("boss", role="admin"))
    return client


def _preview(client):
    """A request whose view writes the session (the pending upload's token)."""
    return client.post(
        reverse("upload_preview"),
        {
            "mode": "batch",
            "name": "s",
            "k": "3",
            "file": SimpleUploadedFile("items.csv", CSV, content_type="text/csv"),
        },
    )


def test_a_lost_database_while_the_session_is_written_is_the_503_page(admin):
    with mock.patch.object(UserSession, "save", side_effect=OperationalError("server closed the connection")):
        response = _preview(admin)
    page = response.content.decode()
    assert response.status_code == 503 and response["Retry-After"] == "5"
    assert "Bad Request" not in page and 'id="error-message"' in page
    assert "Nothing you sent was saved half-way" in page and "Send the form again in 5 seconds" in page


def test_a_session_ended_meanwhile_says_so_and_how_to_go_on(admin):
    real = uploads._remember

    def signed_out_in_another_tab(request, data, pending):
        UserSession.objects.all().delete()
        return real(request, data, pending)

    with mock.patch.object(uploads, "_remember", signed_out_in_another_tab):
        response = _preview(admin)
    page = response.content.decode()
    assert response.status_code == 400 and "Bad Request (400)" not in page
    assert "Your session ended while this was being sent" in page and 'href="/login/"' in page


def test_every_page_loads_the_script_that_shows_failed_htmx_requests(admin):
    page = admin.get(reverse("upload")).content.decode()
    assert "js/request_errors.js" in page
