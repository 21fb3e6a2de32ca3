"""In Chromium: the session countdown runs and, at zero, says the item on screen can no longer be
saved, in view and announced wherever the worker is on the page (a phone scrolled to Submit too); the completion code is the largest text on its page and its button copies it; time that runs
out before any rating ends on a page without a code that says how to return the study."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from annotator.models import Enrolment
from annotator.studies.services.enrolment import enrolment_end
from tests.annotator.study_support import PID_A, prolific_link
from tests.browser.conftest import CHROMIUM, rating_ready
from tests.factories import make_batch

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)"),
]


PHONE = {"width": 390, "height": 844}


def enter(chromium, live_server, token, viewport=None, **context_options):
    context = chromium.new_context(viewport=viewport or {"width": 1360, "height": 1000}, **context_options)
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.goto(f"{live_server.url}/study/{token}/?PROLIFIC_PID={PID_A}&STUDY_ID=st1&SESSION_ID=se1")
    page.click("#instructions-start")
    return context, page


@pytest.mark.django_db(transaction=True)
def test_the_countdown_reaches_zero_and_says_what_happened(chromium, live_server):
    batch = make_batch("countdown", n_items=3)
    _link, token = prolific_link(batch, quota=2, max_minutes=1)
    context, page = enter(chromium, live_server, token)
    rating_ready(page)
    first = page.locator("#session-timer").inner_text()
    assert first.startswith(("0:5", "0:6", "1:00")), first
    page.wait_for_timeout(1500)
    assert page.locator("#session-timer").inner_text() != first  # it ticks
    # The time it stops, in the reader's clock, to the second: not a minute that is already past then.
    stops = page.locator("#session-left time.local-time").inner_text()
    assert re.fullmatch(r"\d{1,2}:\d\d:\d\d( [AP]M)?", stops.strip()), stops
    assert not page.locator("#session-over").is_visible()
    # Jump to the last seconds: the server's countdown of a reloaded page starts there.
    Enrolment.objects.update(started_at=timezone.now() - timedelta(seconds=57))
    page.reload()
    rating_ready(page)
    page.wait_for_selector("#session-over", state="visible", timeout=15_000)
    assert "can no longer be saved" in page.locator("#session-over").inner_text()
    assert page.locator("#submit-btn").is_disabled() and page.locator("#skip-btn").is_disabled()
    assert "is-low" in page.locator("#session-left").get_attribute("class")
    context.close()


@pytest.mark.django_db(transaction=True)
def test_the_code_is_the_largest_text_and_the_button_copies_it(chromium, live_server):
    batch = make_batch("end-page", n_items=3)
    _link, token = prolific_link(batch, quota=2, completion_code="CB7X9Q")
    context, page = enter(chromium, live_server, token, permissions=["clipboard-read", "clipboard-write"])
    rating_ready(page)
    enrolment_end(enrolment=Enrolment.objects.get(), end=Enrolment.End.DONE)
    page.route("https://app.prolific.com/**", lambda route: route.abort())  # the page's 5-second trip back
    page.goto(f"{live_server.url}/annotate/{batch.pk}/done/")
    sizes = page.evaluate("""() => [...document.querySelectorAll('#main *')]
        .filter(e => e.childElementCount === 0 && e.textContent.trim())
        .map(e => [e.id || e.tagName, parseFloat(getComputedStyle(e).fontSize)])""")
    code_size = dict(sizes)["completion-code"]
    assert all(size <= code_size for name, size in sizes), sizes
    page.click("button.copy-code")
    page.wait_for_function("document.querySelector('.copy-state').textContent.length > 0")
    assert page.evaluate("navigator.clipboard.readText()") == "CB7X9Q"
    context.close()


@pytest.mark.django_db(transaction=True)
def test_time_running_out_before_any_rating_ends_without_a_code(chromium, live_server):
    batch = make_batch("countdown-unrated", n_items=3)
    _link, token = prolific_link(batch, quota=2, max_minutes=1)
    context, page = enter(chromium, live_server, token)
    rating_ready(page)
    Enrolment.objects.update(started_at=timezone.now() - timedelta(seconds=57))
    page.reload()
    rating_ready(page)
    page.wait_for_selector("#session-over", state="visible", timeout=15_000)
    finish = page.locator("#session-over a.button")
    assert finish.inner_text().strip() == "Finish"  # no code is promised before a rating
    page.route("https://app.prolific.com/**", lambda route: route.abort())
    finish.click()
    page.wait_for_selector("#time-up-unrated")
    text = page.locator("#study-end").inner_text()
    assert "before you rated any item" in text and "Nothing more can be done in this study" in text
    assert "return your submission" in text and "Cancel participation" in text
    assert page.locator("#completion-code").count() == 0
    assert page.locator('meta[http-equiv="refresh"]').count() == 0
    assert page.locator("#leave-link").get_attribute("href") == "https://app.prolific.com/"
    context.close()


@pytest.mark.django_db(transaction=True)
def test_when_the_time_is_up_its_notice_stands_alone(chromium, live_server):
    """A rating saved in the last seconds swaps in the next item with "Saved your rating."; when the
    countdown then reaches zero, that banner goes and the time-up notice is the only message."""
    batch = make_batch("last-seconds", n_items=3)
    _link, token = prolific_link(batch, quota=3, max_minutes=1)
    context, page = enter(chromium, live_server, token)
    rating_ready(page)
    Enrolment.objects.update(started_at=timezone.now() - timedelta(seconds=50))
    page.keyboard.press("y")
    page.keyboard.press("y")
    for key in "43435":
        page.keyboard.press(key)
    page.click("#submit-btn")
    page.wait_for_selector("#rate-area .message.success")
    assert "Saved your rating." in page.locator("#rate-area .messages").inner_text()
    page.wait_for_selector("#session-over", state="visible", timeout=20_000)
    assert page.locator(".messages, .message").count() == 0
    assert "can no longer be saved" in page.locator("#session-over").inner_text()
    context.close()


def in_view(page, selector: str) -> bool:
    box = page.locator(selector).bounding_box()
    size = page.viewport_size
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= size["height"] and box["x"] >= 0


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_the_time_up_notice_is_in_view_at_the_submit_button(chromium, live_server):
    """On a phone the worker is scrolled down to Submit when the time runs out. The notice used to
    appear at the top of the form, out of view, leaving only a greyed Submit; it now stays in view and
    takes the focus (a screen reader reads it; Tab goes on to Finish)."""
    batch = make_batch("phone-time-up", n_items=3)
    _link, token = prolific_link(batch, quota=2, max_minutes=1)
    context, page = enter(chromium, live_server, token, viewport=PHONE, is_mobile=True, has_touch=True)
    rating_ready(page)
    Enrolment.objects.update(started_at=timezone.now() - timedelta(seconds=50))
    page.reload()
    rating_ready(page)
    page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")  # down at Submit
    assert in_view(page, "#submit-btn") and page.evaluate("window.scrollY") > 0
    page.wait_for_selector("#session-over", state="visible", timeout=20_000)
    page.wait_for_function("document.getElementById('submit-btn').disabled")
    assert in_view(page, "#session-over"), page.locator("#session-over").bounding_box()
    assert in_view(page, "#session-over a.button") and in_view(page, "#submit-btn")
    notice = page.locator("#session-over")
    assert notice.get_attribute("role") == "alert" and "can no longer be saved" in notice.inner_text()
    assert page.evaluate("document.activeElement.id") == "session-over"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent.trim()") == "Finish and see your code" or (
        page.evaluate("document.activeElement.textContent.trim()") == "Finish"
    )
    context.close()
