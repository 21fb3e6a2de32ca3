"""The study's time limit is visible on the rating page (a countdown, also in swapped items), and a
rating that arrives after it is not dropped without a word: the end page says it was not saved."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotator.models import Annotation, Enrolment
from tests.annotator.study_support import PID_A, RATING, arrive, prolific_link, rate_next, start
from tests.factories import make_batch

pytestmark = pytest.mark.django_db


def seconds_left(html: str) -> int:
    return int(re.search(r'id="session-timer"[^>]*data-seconds-left="(\d+)"', html).group(1))


@pytest.fixture
def worker():
    batch = make_batch("timed", n_items=6)
    _link, token = prolific_link(batch, quota=4, max_minutes=20)
    client, _ = arrive(token, PID_A)
    start(client, batch)
    return batch, client, Enrolment.objects.get(worker_id=PID_A)


def test_the_rating_page_counts_down_the_session(worker):
    batch, client, enrolment = worker
    Enrolment.objects.filter(pk=enrolment.pk).update(started_at=timezone.now() - timedelta(minutes=5))
    page = client.get(reverse("annotate_next", args=[batch.pk]))
    html = page.content.decode()
    assert 15 * 60 - 5 <= seconds_left(html) <= 15 * 60
    assert "Session time left" in html and "session_timer.js" in html and 'id="session-over"' in html
    # The next item, swapped in by htmx, carries the countdown too.
    item = page.context["item"]
    swapped = client.post(reverse("annotate_submit", args=[item.pk]), RATING, headers={"HX-Request": "true"})
    assert swapped.status_code == 200 and 0 < seconds_left(swapped.content.decode()) <= 15 * 60


def test_no_countdown_without_a_time_limit():
    batch = make_batch("untimed", n_items=3)
    _link, token = prolific_link(batch, quota=2)
    client, _ = arrive(token, PID_A)
    start(client, batch)
    html = client.get(reverse("annotate_next", args=[batch.pk])).content.decode()
    assert 'id="session-timer"' not in html and 'id="session-over"' not in html


@pytest.mark.parametrize("htmx", [False, True])
def test_a_rating_sent_after_the_time_limit_is_not_dropped_silently(worker, htmx):
    batch, client, enrolment = worker
    rate_next(client, batch)  # one rating in time: the time-out still earns the code
    item = client.get(reverse("annotate_next", args=[batch.pk])).context["item"]
    Enrolment.objects.filter(pk=enrolment.pk).update(started_at=timezone.now() - timedelta(minutes=21))
    headers = {"HX-Request": "true"} if htmx else {}
    response = client.post(reverse("annotate_submit", args=[item.pk]), RATING, headers=headers)
    done = reverse("study_done", args=[batch.pk])
    assert (response["HX-Redirect"] if htmx else response["Location"]) == done
    html = client.get(done).content.decode()
    assert "Your time is up" in html and "C0MPLETE" in html
    assert "time ran out before this rating arrived, so it was not saved" in html
    assert Annotation.objects.count() == 1
    # Said once: a reload of the end page does not repeat it.
    assert "not saved" not in client.get(done).content.decode()


def test_the_time_up_page_stands_alone_without_a_stale_saved_banner(worker):
    """A rating saved just before the limit, then the time ran out: the end page tells the time is up
    (and that the ratings are kept), not "Saved your rating." above it."""
    batch, client, enrolment = worker
    item = client.get(reverse("annotate_next", args=[batch.pk])).context["item"]
    saved = client.post(reverse("annotate_submit", args=[item.pk]), RATING)  # the banner waits in the session
    assert saved.status_code == 302 and Annotation.objects.count() == 1
    Enrolment.objects.filter(pk=enrolment.pk).update(started_at=timezone.now() - timedelta(minutes=21))
    page = client.get(reverse("annotate_next", args=[batch.pk]), follow=True)
    html = page.content.decode()
    assert page.redirect_chain[-1][0] == reverse("study_done", args=[batch.pk])
    assert "Your time is up" in html and "You rated 1 item, and it is kept." in html
    assert "Saved your rating." not in html and 'class="messages"' not in html
    # Consumed, not just hidden: it does not come back on the next page either.
    assert "Saved your rating." not in client.get(reverse("study_done", args=[batch.pk])).content.decode()


def test_the_page_gives_its_two_clock_times_alike_and_no_lease_past_the_session(worker):
    """The session's end and the lease's end are both marked for the reader's own clock (rate.js), and
    a lease that outlasts the session is not shown: the session ends first, whatever the lease says."""
    batch, client, enrolment = worker
    html = client.get(reverse("annotate_next", args=[batch.pk])).content.decode()  # 20 min left, lease 30 min
    # The session's end to the second (the page stops then), the lease's to the minute.
    assert re.search(
        r'\(until <time class="local-time" data-seconds datetime="[^"]+">\d\d:\d\d:\d\d UTC</time>\)', html
    )
    assert "Held for you until" not in html
    untimed = make_batch("untimed-lease", n_items=3)
    _link, token = prolific_link(untimed, quota=2)
    other, _ = arrive(token, "6f0c1a2b3c4d5e6f7a8b9c0e")
    start(other, untimed)
    html = other.get(reverse("annotate_next", args=[untimed.pk])).content.decode()
    assert re.search(
        r'Held for you until <time class="local-time" datetime="[^"]+">\d\d:\d\d UTC</time>', html
    )
