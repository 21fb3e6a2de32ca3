"""Stopping a judge run says so inside the polled status, so the notice goes by itself once the run
is cancelled (a message above the status stayed there until the page was reloaded)."""

import re

import pytest
from django.urls import reverse
from django.utils import timezone

from annotator.job_kinds import JOB_KINDS
from annotator.models import Job
from tests.factories import make_running_job, make_user

pytestmark = pytest.mark.django_db
STOPPING = JOB_KINDS[Job.JUDGE_RUN].stopping


def status_section(html: str) -> str:
    return re.search(r'<section class="card job-status" id="job-status".*?</section>', html, re.S).group(0)


def test_the_stopping_notice_lives_in_the_status_and_goes_when_the_run_is_cancelled(client):
    owner = make_user("res", role="researcher")
    client.force_login(owner)
    job = make_running_job(owner)
    page = client.post(reverse("job_stop", args=[job.pk]), follow=True).content.decode()
    assert STOPPING in status_section(page) and page.count(STOPPING) == 1
    assert 'class="messages"' not in page  # nothing outside the polled part would outlive the run
    polled = client.get(reverse("job_status", args=[job.pk]), headers={"HX-Request": "true"}).content.decode()
    assert STOPPING in polled  # while the calls in flight finish
    Job.objects.filter(pk=job.pk).update(state=Job.CANCELLED, finished_at=timezone.now(), message="Stopped.")
    polled = client.get(reverse("job_status", args=[job.pk]), headers={"HX-Request": "true"}).content.decode()
    assert "<h2>Cancelled</h2>" in polled and STOPPING not in polled
    assert STOPPING not in client.get(reverse("job_status", args=[job.pk])).content.decode()


def test_time_left_goes_away_while_the_run_is_stopping(client):
    """Stopping sends no new calls, so the time the remaining calls would take is not what is left."""
    owner = make_user("res", role="researcher")
    client.force_login(owner)
    progress = {"total": 36, "done": 13, "failed": 0, "retries": 0, "tokens_in": 1, "tokens_out": 1}
    job = make_running_job(owner, progress={**progress, "eta_seconds": 14})
    polled = client.get(reverse("job_status", args=[job.pk]), headers={"HX-Request": "true"}).content.decode()
    assert "<dt>Time left</dt><dd>about 14 s</dd>" in polled  # the run goes on: the estimate is shown
    client.post(reverse("job_stop", args=[job.pk]))
    polled = client.get(reverse("job_status", args=[job.pk]), headers={"HX-Request": "true"}).content.decode()
    assert STOPPING in polled and "Time left" not in polled
