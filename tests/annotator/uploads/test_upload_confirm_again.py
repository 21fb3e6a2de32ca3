"""A confirm whose reply was lost (the process killed after its commit), sent again, says the upload was saved."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotator.models import Batch, Item, Job
from annotator.uploads import views as uploads
from tests.annotator.uploads.test_uploads_view import GOOD, _post_preview
from tests.factories import upload_storage_at

pytestmark = pytest.mark.django_db


class ProcessKilled(BaseException):
    """Stands for the worker dying between the commit and the reply (nothing after it runs)."""


@pytest.fixture
def admin_client(client, admin_user, settings, tmp_path):
    upload_storage_at(settings, tmp_path / "uploads")
    client.force_login(admin_user)
    return client


def _killed_after_commit(admin_client, monkeypatch, token):
    def die(request, token):
        raise ProcessKilled

    with monkeypatch.context() as patch:
        patch.setattr(uploads, "_forget", die)
        with pytest.raises(ProcessKilled):
            admin_client.post(reverse("upload_confirm"), {"token": token})


def test_confirming_again_says_the_batch_was_saved(admin_client, monkeypatch):
    token = _post_preview(admin_client, GOOD, name="lost-reply").context["token"]
    _killed_after_commit(admin_client, monkeypatch, token)
    assert Batch.objects.filter(name="lost-reply").exists()  # committed before the reply was lost
    again = admin_client.post(reverse("upload_confirm"), {"token": token}, follow=True)
    page = again.content.decode()
    assert again.status_code == 200
    assert "already saved" in page and "lost-reply" in page and "3 items" in page
    assert "Nothing will be saved" not in page and "already exists" not in page
    assert Item.objects.filter(batch__name="lost-reply").count() == 3
    # The token is used up: a third confirm (another tab) says the same, and nothing is saved twice.
    third = admin_client.post(reverse("upload_confirm"), {"token": token}, follow=True)
    assert "already saved" in third.content.decode() and Batch.objects.count() == 1


def test_a_large_upload_confirmed_again_shows_its_job(admin_client, monkeypatch, settings):
    settings.ANNOTATOR_BACKGROUND_UPLOAD_BYTES = 10
    token = _post_preview(admin_client, GOOD, name="big").context["token"]
    _killed_after_commit(admin_client, monkeypatch, token)
    job = Job.objects.get(kind=Job.UPLOAD)
    again = admin_client.post(reverse("upload_confirm"), {"token": token})
    assert again.status_code == 302 and again.url == reverse("job_status", args=[job.pk])
    assert Job.objects.filter(kind=Job.UPLOAD).count() == 1


def test_another_admin_cannot_use_the_receipt(admin_client, monkeypatch, client):
    token = _post_preview(admin_client, GOOD, name="mine").context["token"]
    admin_client.post(reverse("upload_confirm"), {"token": token})
    from django.test import Client

    from tests.factories import make_user

    other = Client()
    other.force_login(make_user("admin2", role="admin"))
    response = other.post(reverse("upload_confirm"), {"token": token}, follow=True)
    assert "no longer waiting" in response.content.decode()
