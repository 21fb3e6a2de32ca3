"""An htmx Submit that fails shows, beside the Submit button, what a full page would say, and
keeps everything the person chose; sent again once the database is back, it saves once."""

from __future__ import annotations

from unittest import mock

import pytest
from django.db import OperationalError
from django.urls import reverse

from annotator.models import Annotation
from annotator.rating.views import rating
from tests.browser.conftest import htmx_settled, rating_ready, signed_in_context
from tests.factories import make_batch, make_user

pytestmark = pytest.mark.browser


def _fill(page):
    keys = page.keyboard
    keys.press("y")
    keys.press("y")
    for key in "43435":
        keys.press(key)


def _chosen(page) -> list[str]:
    return page.eval_on_selector_all(
        "#rate-form input:checked", "els => els.map(e => e.name + '=' + e.value)"
    )


@pytest.mark.django_db(transaction=True)
def test_a_submit_during_an_outage_says_so_in_place_and_keeps_the_answers(chromium, live_server):
    batch = make_batch("outage", n_items=2)
    user = make_user("rater")
    page = signed_in_context(chromium, live_server, user).new_page()
    page.goto(live_server.url + reverse("annotate_next", args=[batch.pk]))
    rating_ready(page)
    _fill(page)
    before = _chosen(page)
    assert len(before) == 7
    with mock.patch.object(
        rating, "annotation_submit", side_effect=OperationalError("server closed the connection")
    ):
        page.click("#submit-btn")
        alert = page.wait_for_selector("#rate-form .request-error[role=alert]")
    text = alert.inner_text()
    assert "The database is not answering for a moment" in text
    assert "Nothing you sent was saved half-way" in text and "Send the form again in 5 seconds" in text
    assert "go back" not in text  # the form is right here; going back is advice for the full page
    assert _chosen(page) == before  # nothing the person chose was lost
    assert not Annotation.objects.exists()
    page.click("#submit-btn")  # the database is back
    htmx_settled(page, ".message.success")
    assert page.locator(".request-error").count() == 0
    assert Annotation.objects.filter(annotator=user).count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_submit_that_cannot_reach_the_server_says_so(chromium, live_server):
    batch = make_batch("offline", n_items=2)
    page = signed_in_context(chromium, live_server, make_user("rater")).new_page()
    page.goto(live_server.url + reverse("annotate_next", args=[batch.pk]))
    rating_ready(page)
    _fill(page)
    before = _chosen(page)
    page.route("**/submit/", lambda route: route.abort("connectionreset"))
    page.click("#submit-btn")
    alert = page.wait_for_selector("#rate-form .request-error[role=alert]")
    assert "could not be reached" in alert.inner_text() and "Nothing was lost" in alert.inner_text()
    assert _chosen(page) == before


@pytest.mark.parametrize("viewport", [{"width": 1360, "height": 1000}, {"width": 390, "height": 844}])
@pytest.mark.django_db(transaction=True)
def test_the_outage_message_is_where_the_person_looks_and_has_the_focus(chromium, live_server, viewport):
    """Not below the rubric at the foot of the form: where the form's other save errors go, above the
    item and the scores, on screen and focused (a screen reader reads it), with every answer kept."""
    batch = make_batch("outage-place", n_items=2)
    page = signed_in_context(chromium, live_server, make_user("rater"), viewport=viewport).new_page()
    page.goto(live_server.url + reverse("annotate_next", args=[batch.pk]))
    rating_ready(page)
    _fill(page)
    before = _chosen(page)
    with mock.patch.object(
        rating, "annotation_submit", side_effect=OperationalError("server closed the connection")
    ):
        page.click("#submit-btn")
        alert = page.wait_for_selector("#rate-form .request-error[role=alert]")
    assert "The database is not answering for a moment" in alert.inner_text()
    assert alert.evaluate("e => e.nextElementSibling.classList.contains('rate-grid')")
    assert page.evaluate("document.activeElement.classList.contains('request-error')")
    top, bottom = alert.evaluate("e => [e.getBoundingClientRect().top, e.getBoundingClientRect().bottom]")
    assert 0 <= top and bottom <= viewport["height"], (top, bottom)
    assert _chosen(page) == before
