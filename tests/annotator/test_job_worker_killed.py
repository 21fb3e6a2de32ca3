"""A background job whose worker process is killed is failed (not left Running for ever), and then
"Try again" runs it and "Stop" ends it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from annotator.models import Batch, Job
from annotator.selectors.jobs import job_worker_gone
from tests.factories import make_user

ROOT = Path(__file__).resolve().parents[2]
CSV = (
    b"item_id,prompt,response,system_id\n"
    b"k1,Plan a route avoiding tolls.,Take Route 9.,sys-a\nk2,Plan a route avoiding tolls.,Take I-90.,sys-b\n"
)

# The worker: the real job runner, with the save held up so the test can kill it mid-job.
WORKER = """
import os, sys, time
os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
from django.conf import settings
settings.DATABASES["default"]["NAME"] = sys.argv[1]
settings.ANNOTATOR_JOB_HEARTBEAT_SECONDS = 1
import django
django.setup()
from annotator.services import job_runner
def held_up(**kwargs):
    print("saving", flush=True)
    time.sleep(300)
job_runner.pending_upload_save = held_up
job_runner.job_run(job_id=sys.argv[2])
"""


def _upload_job(user) -> Job:
    pending = {"mode": "batch", "filename": "items.csv", "name": "killed-mid-save", "k": 3, "rubric": None}
    return Job.objects.create(
        kind=Job.UPLOAD, created_by=user, params=pending, payload=CSV, label="Upload of items.csv"
    )


def _start_worker(job: Job) -> subprocess.Popen:
    worker = subprocess.Popen(
        [sys.executable, "-c", WORKER, connection.settings_dict["NAME"], str(job.pk)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = worker.stdout.readline()
    assert line.strip() == "saving", worker.stderr.read()
    return worker


@pytest.fixture
def owner(client):
    user = make_user("boss", role="admin")
    client.force_login(user)
    return user


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_killed_worker_fails_its_job_and_try_again_saves_it(client, owner):
    job = _upload_job(owner)
    worker = _start_worker(job)
    try:
        job.refresh_from_db()
        assert job.state == Job.RUNNING and job.worker.endswith(f":{worker.pid}")
        first_beat = job.heartbeat_at
        time.sleep(1.6)
        job.refresh_from_db()
        assert job.heartbeat_at > first_beat  # the worker says it is alive
        page = client.get(reverse("job_status", args=[job.pk])).content.decode()
        assert "Running" in page and "Try again" not in page  # a live worker is left alone
    finally:
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(10)

    page = client.get(reverse("job_status", args=[job.pk]), headers={"HX-Request": "true"}).content.decode()
    job.refresh_from_db()
    assert job.state == Job.FAILED and "worker stopped" in job.message and "Nothing was saved" in job.message
    assert "Try again" in page and 'hx-trigger="every 1s"' not in page  # the polling stops
    assert not Batch.objects.filter(name="killed-mid-save").exists()

    response = client.post(reverse("job_try_again", args=[job.pk]))  # the test settings run tasks at once
    assert response.status_code == 302
    job.refresh_from_db()
    assert job.state == Job.DONE and job.attempts == 2
    assert Batch.objects.get(name="killed-mid-save").items.count() == 2


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_stop_ends_a_job_whose_worker_was_killed(client, owner):
    job = _upload_job(owner)
    worker = _start_worker(job)
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait(10)
    response = client.post(reverse("job_stop", args=[job.pk]), follow=True)
    job.refresh_from_db()
    assert job.state == Job.CANCELLED and "Stopped." in response.content.decode()
    assert "Start again" in response.content.decode()


@pytest.mark.django_db
def test_a_worker_on_another_machine_is_judged_by_its_heartbeat(settings):
    settings.ANNOTATOR_JOB_STALE_SECONDS = 60
    user = make_user("boss", role="admin")
    now = timezone.now()
    job = Job(
        kind=Job.EXPORT,
        created_by=user,
        state=Job.RUNNING,
        worker="elsewhere.example:4242",
        started_at=now - timedelta(minutes=10),
        heartbeat_at=now - timedelta(seconds=30),
    )
    assert not job_worker_gone(job, now=now)
    job.heartbeat_at = now - timedelta(seconds=61)
    assert job_worker_gone(job, now=now)
    job.state = Job.DONE
    assert not job_worker_gone(job, now=now)  # only running jobs are reclaimed


@pytest.mark.django_db
def test_the_api_ends_a_job_whose_worker_is_gone(settings):
    """A client polling only the API sees a job whose worker stopped beating fail, as the job page does."""
    from tests.annotator.api.conftest import ApiClient, token_for

    settings.ANNOTATOR_JOB_STALE_SECONDS = 60
    owner = make_user("api-poller", role="admin")
    job = Job.objects.create(
        kind=Job.EXPORT,
        created_by=owner,
        label="a report",
        params={},
        state=Job.RUNNING,
        worker="elsewhere.example:4242",
        started_at=timezone.now() - timedelta(minutes=10),
        heartbeat_at=timezone.now() - timedelta(seconds=61),
    )
    api = ApiClient(token_for(owner))
    polled = api.get(f"/jobs/{job.pk}")
    assert polled.status_code == 200 and polled.json()["state"] == Job.FAILED
    result = api.get(f"/jobs/{job.pk}/result")
    assert result.status_code == 409 and Job.FAILED in result.json()["detail"]
    job.refresh_from_db()
    assert job.state == Job.FAILED and job.finished_at is not None
