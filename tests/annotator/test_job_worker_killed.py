"""A background job whose worker process is killed is failed (not left Running for ever), and then
"Try again" runs it and "Stop" ends it; an upload whose save the database holds says so, killed or not."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from annotator.job_kinds import JOB_KINDS
from annotator.models import Batch, Job
from annotator.selectors.jobs import job_worker_gone
from annotator.uploads.services.batches import batch_import_file
from hcs.rubric import Rubric
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
from annotator.uploads.services import confirm
def held_up(**kwargs):
    print("saving", flush=True)
    time.sleep(300)
confirm.pending_upload_save = held_up
job_runner.job_run(job_id=sys.argv[2])
"""


# The worker: the real job runner and save, killed (SIGKILL) the moment the save's transaction commits,
# before any later statement: what a worker killed between the commit and recording the job's end leaves.
WORKER_KILLED_AT_COMMIT = """
import os, signal, sys
os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
from django.conf import settings
settings.DATABASES["default"]["NAME"] = sys.argv[1]
import django
django.setup()
from django.db import transaction
from annotator.services import job_runner
from annotator.uploads.services import confirm
save = confirm.pending_upload_save
def save_then_die(**kwargs):
    saved = save(**kwargs)
    print("saving", flush=True)
    # Run at once (the save's transaction has ended): nothing after the commit runs.
    transaction.on_commit(lambda: os.kill(os.getpid(), signal.SIGKILL))
    return saved
confirm.pending_upload_save = save_then_die
job_runner.job_run(job_id=sys.argv[2])
"""


def _upload_job(user, name: str = "killed-mid-save", **fields) -> Job:
    pending = {"mode": "batch", "filename": "items.csv", "name": name, "k": 3, "rubric": None}
    return Job.objects.create(
        kind=Job.UPLOAD, created_by=user, params=pending, payload=CSV, label="Upload of items.csv", **fields
    )


def _start_worker(job: Job, script: str = WORKER) -> subprocess.Popen:
    worker = subprocess.Popen(
        [sys.executable, "-c", script, connection.settings_dict["NAME"], str(job.pk)],
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


def _links(batch: Batch) -> list[str]:
    return [
        reverse("report_batch", args=[batch.pk]),
        reverse("assignment_batch", args=[batch.pk]),
        f"{reverse('studies')}?batch={batch.pk}#new-study-link",
    ]


def _dead_worker() -> str:
    """A worker name ("host:pid") of a process on this machine that has ended."""
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait(10)
    return f"{socket.gethostname()}:{ended.pid}"


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_right_after_the_commit_leaves_a_done_job(client, owner):
    """The save committed and the worker was killed before another statement: the job says done (the
    upload's end is written in its transaction), not "Failed … Nothing was saved"."""
    job = _upload_job(owner, name="killed-after-commit")
    worker = _start_worker(job, WORKER_KILLED_AT_COMMIT)
    assert worker.wait(60) == -signal.SIGKILL
    batch = Batch.objects.get(name="killed-after-commit")
    assert batch.items.count() == 2

    page = client.get(reverse("job_status", args=[job.pk])).content.decode()
    job.refresh_from_db()
    assert job.state == Job.DONE and job.payload is None, job.message
    assert "Done" in page and "created with 2 items" in page and "Nothing was saved" not in page
    assert all(f'href="{url}"' in page for url in _links(batch))
    # Nothing to try again: the page says so, and nothing is saved twice.
    again = client.post(reverse("job_try_again", args=[job.pk]), follow=True).content.decode()
    assert "has not failed" in again and "already exists" not in again
    assert Batch.objects.filter(name="killed-after-commit").count() == 1


@pytest.mark.django_db
def test_a_dead_workers_job_whose_batch_was_committed_ends_done(client, owner):
    """A job left running by a worker that committed the batch but never recorded the job's end (a worker
    of an earlier release, killed in between) ends done when reclaimed, with links to the batch."""
    job = _upload_job(
        owner,
        name="committed-unrecorded",
        state=Job.RUNNING,
        worker=_dead_worker(),
        started_at=timezone.now() - timedelta(seconds=5),
        attempts=1,
    )
    batch = batch_import_file(
        data=CSV,
        filename="items.csv",
        name="committed-unrecorded",
        k=3,
        rubric=Rubric.default(),
        created_by=owner,
    )
    page = client.get(reverse("job_status", args=[job.pk])).content.decode()
    job.refresh_from_db()
    assert job.state == Job.DONE and job.params["batch_id"] == batch.pk and job.payload is None
    assert "stopped after this upload was saved" in job.message and "holds 2 items" in job.message
    assert "Nothing was saved" not in page and "Try again" not in page
    assert all(f'href="{url}"' in page for url in _links(batch))


@pytest.mark.django_db
def test_try_again_on_an_upload_already_saved_says_so(client, owner, django_capture_on_commit_callbacks):
    """A job failed as "Nothing was saved" although its batch was committed: "Try again" says the upload
    is already saved and links to it, instead of failing with "already exists"."""
    job = _upload_job(
        owner, name="saved-but-failed", state=Job.FAILED, message=JOB_KINDS[Job.UPLOAD].gone, attempts=1
    )
    batch = batch_import_file(
        data=CSV,
        filename="items.csv",
        name="saved-but-failed",
        k=3,
        rubric=Rubric.default(),
        created_by=owner,
    )
    with django_capture_on_commit_callbacks(execute=True):  # the job runs as it is queued
        response = client.post(reverse("job_try_again", args=[job.pk]))
    page = client.get(response.url).content.decode()
    job.refresh_from_db()
    assert job.state == Job.DONE and job.attempts == 2
    assert "already saved by an earlier attempt" in page and "holds 2 items" in page
    assert "already exists" not in page and "Failed" not in page
    assert all(f'href="{url}"' in page for url in _links(batch))
    assert Batch.objects.filter(name="saved-but-failed").count() == 1


@pytest.mark.django_db
def test_try_again_does_not_claim_someone_elses_batch(client, owner, django_capture_on_commit_callbacks):
    """Another admin's batch of the same name is not this upload: trying again is refused, as before."""
    job = _upload_job(owner, name="taken-by-another", state=Job.FAILED, message="failed", attempts=1)
    batch_import_file(
        data=CSV,
        filename="items.csv",
        name="taken-by-another",
        k=3,
        rubric=Rubric.default(),
        created_by=make_user("other-admin", role="admin"),
    )
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("job_try_again", args=[job.pk]))
    job.refresh_from_db()
    assert job.state == Job.FAILED and "already exists" in job.errors[0]["message"]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="row locks: PostgreSQL only")
@pytest.mark.django_db(transaction=True)
def test_a_save_still_settling_in_the_database_is_not_called_failed(client, owner):
    """The worker is dead but its save's transaction is still open in the database (its connection held
    by a proxy, the commit on its way): the job page answers at once without calling it failed, and says
    done once that commit lands."""
    import psycopg

    job = _upload_job(
        owner, name="settling", state=Job.RUNNING, worker=_dead_worker(), started_at=timezone.now()
    )
    db = connection.settings_dict
    with psycopg.connect(
        host=db["HOST"], port=db["PORT"] or 5432, user=db["USER"], password=db["PASSWORD"], dbname=db["NAME"]
    ) as dead_workers_save:
        # What the save's transaction writes last: the job's end, which holds the row's lock until it commits.
        dead_workers_save.execute(
            "UPDATE annotator_job SET state = 'done', message = 'Saved.' WHERE id = %s", [job.pk]
        )
        started = time.monotonic()
        page = client.get(reverse("job_status", args=[job.pk])).content.decode()
        assert time.monotonic() - started < 5
        assert "Running" in page and "Nothing was saved" not in page
        job.refresh_from_db()
        assert job.state == Job.RUNNING
        dead_workers_save.commit()
    page = client.get(reverse("job_status", args=[job.pk])).content.decode()
    assert "Done" in page and "Saved." in page and "Nothing was saved" not in page
