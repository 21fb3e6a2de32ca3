"""In Chromium: the judge run page's "Stopping" notice goes by itself when the progress poll finds the
run cancelled; no reload is needed for the page to stop saying it is stopping."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone

from annotator.models import Job
from tests.browser.conftest import CHROMIUM, signed_in_context
from tests.factories import make_running_job, make_user

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)"),
]


@pytest.mark.django_db(transaction=True)
def test_stopping_goes_when_the_poll_finds_the_run_cancelled(chromium, live_server):
    owner = make_user("res", role="researcher")
    job = make_running_job(owner)
    page = signed_in_context(chromium, live_server, owner).new_page()
    page.set_default_timeout(30_000)
    page.goto(live_server.url + reverse("job_status", args=[job.pk]))
    page.click("text=Stop the run")
    page.wait_for_selector("#job-stopping")
    assert "no new calls" in page.locator("#job-stopping").inner_text()
    Job.objects.filter(pk=job.pk).update(
        state=Job.CANCELLED, finished_at=timezone.now(), message="Stopped: start the run again to resume."
    )
    page.wait_for_selector("#job-status h2:text-is('Cancelled')")
    assert page.locator("#job-stopping").count() == 0
    assert page.locator("text=no new calls").count() == 0  # nowhere on the page, messages included
