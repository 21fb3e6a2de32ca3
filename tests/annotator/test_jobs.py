"""Background jobs: large uploads and report builds run through django-tasks; the status page;
failures shown without losing the upload; /healthz."""

from __future__ import annotations

import json
from unittest import mock

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.db import OperationalError
from django.urls import reverse
from django.utils import timezone

from annotator.db_deadline import stall
from annotator.models import Batch, Item, Job
from annotator.selectors.jobs import this_worker
from tests.factories import make_annotation, make_batch, make_user, upload_storage_at

pytestmark = pytest.mark.django_db

GOOD = (
    "item_id,prompt,response,system_id,constraints\n"
    "r1,Plan a route to the airport avoiding tolls.,Take Route 9 (no tolls).,sys-a,avoid tolls\n"
    "r2,Plan a route to the airport avoiding tolls.,Take the I-90 toll road.,sys-b,avoid tolls\n"
    "r3,Get me to work before 8AM.,Leave at 7:10 via Elm St.,sys-a,arrive before 8AM\n"
)
SCORES = {"coherence": 4, "relevance": 3, "instruction_following": 4, "safety_compliance": 5, "fluency": 4}


@pytest.fixture(autouse=True)
def small_thresholds(settings, tmp_path):
    upload_storage_at(settings, tmp_path / "uploads")
    settings.ANNOTATOR_BACKGROUND_UPLOAD_BYTES = 100  # GOOD is larger: it goes to the worker
    settings.ANNOTATOR_BACKGROUND_REPORT_ITEMS = 3


@pytest.fixture
def admin_client(client):
    client.force_login(make_user("boss", role="admin"))
    return client


def _confirm(client, content: str, *, name="bg-batch"):
    file = SimpleUploadedFile("items.csv", content.encode(), content_type="text/csv")
    preview = client.post(reverse("upload_preview"), {"mode": "batch", "name": name, "k": "3", "file": file})
    assert preview.status_code == 200, preview.content[:500]
    return client.post(reverse("upload_confirm"), {"token": preview.context["token"]})


def test_large_upload_runs_as_a_task_and_the_status_page_says_done(
    admin_client, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = _confirm(admin_client, GOOD)
    job = Job.objects.get()
    assert response.status_code == 302 and response.url == reverse("job_status", args=[job.pk])
    assert job.kind == Job.UPLOAD and job.state == Job.DONE and job.attempts == 1
    assert job.payload is None  # the file is dropped once saved
    assert Item.objects.filter(batch__name="bg-batch").count() == 3
    page = admin_client.get(response.url).content.decode()
    assert "Done" in page and "created with 3 items" in page and "hx-trigger" not in page
    batch = Batch.objects.get(name="bg-batch")
    assert f'href="{reverse("report_batch", args=[batch.pk])}"' in page
    assert f'href="{reverse("assignment_batch", args=[batch.pk])}"' in page


def test_small_upload_stays_synchronous(admin_client, settings):
    settings.ANNOTATOR_BACKGROUND_UPLOAD_BYTES = 10_000
    response = _confirm(admin_client, GOOD)
    # Saved in the request: the only job row is its receipt, done, with no file kept.
    assert list(Job.objects.values_list("state", "payload")) == [(Job.DONE, None)]
    assert response.status_code == 302 and response.url == f"{reverse('upload')}?saved={Job.objects.get().pk}"
    assert Item.objects.filter(batch__name="bg-batch").count() == 3
    # The upload page then links to the new batch's report, its assignment and a study link for it.
    batch = Batch.objects.get(name="bg-batch")
    page = admin_client.get(response.url).content.decode()
    assert "created with 3 items" in page
    for url in (
        reverse("report_batch", args=[batch.pk]),
        reverse("assignment_batch", args=[batch.pk]),
        f"{reverse('studies')}?batch={batch.pk}#new-study-link",
    ):
        assert f'href="{url}"' in page, url
    # The study link's form starts on that batch.
    studies = admin_client.get(f"{reverse('studies')}?batch={batch.pk}").content.decode()
    assert f'<option value="{batch.pk}" selected>' in studies


def test_refused_upload_shows_row_errors_saves_nothing_and_keeps_the_file(
    admin_client, django_capture_on_commit_callbacks
):
    file = SimpleUploadedFile("items.csv", GOOD.encode(), content_type="text/csv")
    preview = admin_client.post(
        reverse("upload_preview"), {"mode": "batch", "name": "taken", "k": "3", "file": file}
    )
    make_batch("taken", n_items=1)  # someone takes the name between preview and confirm
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(reverse("upload_confirm"), {"token": preview.context["token"]})
    job = Job.objects.get()
    assert job.state == Job.FAILED and job.errors and "nothing was saved" in job.message
    assert bytes(job.payload) == GOOD.encode()
    assert Item.objects.filter(batch__name="taken").count() == 1
    page = admin_client.get(response.url).content.decode()
    assert "Failed" in page and "already" in page and "row-error" in page


def test_crashed_upload_shows_its_error_and_succeeds_when_tried_again(
    admin_client, django_capture_on_commit_callbacks
):
    with (
        mock.patch(
            "annotator.uploads.services.confirm.batch_import", side_effect=RuntimeError("disk on fire")
        ),
        django_capture_on_commit_callbacks(execute=True),
    ):
        response = _confirm(admin_client, GOOD)
    job = Job.objects.get()
    assert job.state == Job.FAILED and "RuntimeError: disk on fire" in job.message
    assert not Batch.objects.filter(name="bg-batch").exists()
    page = admin_client.get(response.url).content.decode()
    assert "disk on fire" in page and reverse("job_try_again", args=[job.pk]) in page

    with django_capture_on_commit_callbacks(execute=True):
        again = admin_client.post(reverse("job_try_again", args=[job.pk]))
    job.refresh_from_db()
    assert again.url == reverse("job_status", args=[job.pk])
    assert job.state == Job.DONE and job.attempts == 2
    assert Item.objects.filter(batch__name="bg-batch").count() == 3


def test_large_report_export_is_built_by_a_task_and_matches_the_synchronous_one(
    client, settings, django_capture_on_commit_callbacks
):
    batch = make_batch("exp", n_items=4)
    people = [make_user(f"a{i}") for i in range(3)]
    for item in batch.items.all():
        for person in people:
            make_annotation(item, person, SCORES)
    client.force_login(make_user("res", role="researcher"))
    with django_capture_on_commit_callbacks(execute=True):
        response = client.get(reverse("report_export", args=[batch.pk, "json"]))
    job = Job.objects.get()
    assert response.url == reverse("job_status", args=[job.pk]) and job.state == Job.DONE
    download = client.get(reverse("job_download", args=[job.pk]))
    assert (
        download["Content-Type"] == "application/json"
        and "exp-report.json" in download["Content-Disposition"]
    )
    settings.ANNOTATOR_BACKGROUND_REPORT_ITEMS = 100
    direct = client.get(reverse("report_export", args=[batch.pk, "json"]))
    assert json.loads(download.content) == json.loads(direct.content)
    assert Job.objects.count() == 1  # the small one stayed synchronous


def test_status_fragment_polls_while_queued_and_has_a_refresh_link(admin_client):
    user = Job._meta.get_field("created_by").related_model.objects.get(username="boss")
    job = Job.objects.create(kind=Job.EXPORT, label="HTML report of x", created_by=user)
    url = reverse("job_status", args=[job.pk])
    fragment = admin_client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert "<html" not in fragment and 'hx-trigger="every 1s"' in fragment and f'href="{url}"' in fragment
    Job.objects.filter(pk=job.pk).update(
        state=Job.RUNNING,
        step="Computing agreement statistics",
        worker=this_worker(),
        started_at=timezone.now(),
    )  # this live process
    fragment = admin_client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert "Computing agreement statistics" in fragment and "<progress" in fragment
    full = admin_client.get(url).content.decode()
    assert "<html" in full and "Refresh" in full


def test_jobs_are_private_to_their_owner(client, admin_client):
    owner = Job._meta.get_field("created_by").related_model.objects.get(username="boss")
    job = Job.objects.create(kind=Job.EXPORT, label="x", created_by=owner, state=Job.DONE, output=b"{}")
    for name in ("job_status", "job_download"):
        assert admin_client.get(reverse(name, args=[job.pk])).status_code == 200
    other = client.__class__()
    other.force_login(make_user("other-admin", role="admin"))
    for name in ("job_status", "job_download"):
        assert other.get(reverse(name, args=[job.pk])).status_code == 404
    assert other.post(reverse("job_try_again", args=[job.pk])).status_code == 404
    anonymous = client.__class__()
    assert anonymous.get(reverse("job_status", args=[job.pk])).url.startswith(reverse("login"))


@pytest.mark.django_db(transaction=True)  # the worker closes its connection between tasks
def test_the_database_worker_runs_a_queued_upload(admin_client, settings):
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": ["default"]}}
    response = _confirm(admin_client, GOOD)
    job = Job.objects.get()
    assert job.state == Job.QUEUED and not Batch.objects.filter(name="bg-batch").exists()
    assert 'hx-trigger="every 1s"' in admin_client.get(response.url).content.decode()
    call_command("db_worker", "--batch", "--interval", "0", "--no-startup-delay", verbosity=0)
    job.refresh_from_db()
    assert job.state == Job.DONE
    assert Item.objects.filter(batch__name="bg-batch").count() == 3


def test_healthz_checks_the_database(client):
    response = client.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok", "database": "ok"}
    try:
        with mock.patch("django.db.connections.create_connection") as fresh:  # the probe's own connection
            fresh.return_value.cursor.side_effect = OperationalError("gone")
            response = client.get("/healthz")
        assert response.status_code == 503 and response.json() == {
            "status": "error",
            "database": "OperationalError",
        }
        assert response["Retry-After"] == "5"
    finally:
        stall.reset()  # the failed probe opened this process's breaker
