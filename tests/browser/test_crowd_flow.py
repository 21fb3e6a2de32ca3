"""A crowd worker in a real browser: the study link, consent, instructions, two items rated with
the keyboard, and the completion code (Chromium via Playwright against the live server)."""

from __future__ import annotations

import pytest

from annotator.models import Annotation, Enrolment
from tests.annotator.study_support import PID_A, prolific_link
from tests.browser.conftest import CHROMIUM, htmx_settled, rating_ready
from tests.factories import make_batch

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)"),
]


def rate_with_keys(page) -> None:
    rating_ready(page)
    for key in ("y", "y", "4", "4", "5", "5", "4"):  # two constraints met, then C R I S F
        page.keyboard.press(key)
    page.keyboard.press("Enter")


@pytest.mark.django_db(transaction=True)
def test_link_consent_instructions_two_items_completion_code(chromium, live_server):
    batch = make_batch("crowd-browser", n_items=4)
    batch.consent_text = "## Consent\n\nYou agree that we keep your ratings under a pseudonym."
    batch.save()
    _link, token = prolific_link(batch, quota=2, completion_code="CB7X9Q")
    context = chromium.new_context(viewport={"width": 1360, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(30_000)

    page.goto(f"{live_server.url}/study/{token}/?PROLIFIC_PID={PID_A}&STUDY_ID=st1&SESSION_ID=se1")
    assert "keep your ratings under a pseudonym" in page.locator("#consent-text").inner_text()
    page.click("#consent-accept")

    page.wait_for_selector("#instructions-text")
    assert "General instructions" in page.locator("#instructions-text").inner_text()
    assert "up to 2 items" in page.content()
    page.click("#instructions-start")

    rate_with_keys(page)
    htmx_settled(page, ".message.success")
    # The instructions are one key away on the next item.
    drawer = page.locator("#instructions-drawer")
    assert not drawer.evaluate("d => d.open")
    page.keyboard.press("i")
    assert drawer.evaluate("d => d.open") and "General instructions" in drawer.inner_text()
    page.keyboard.press("i")
    page.locator(".item-label").click()  # focus back on the page, not a field or link
    rate_with_keys(page)

    page.wait_for_selector("#completion-code")
    assert page.locator("#completion-code").inner_text() == "CB7X9Q"
    assert page.locator("#completion-link").get_attribute("href") == (
        "https://app.prolific.com/submissions/complete?cc=CB7X9Q"
    )
    enrolment = Enrolment.objects.get(worker_id=PID_A)
    assert enrolment.end == Enrolment.End.DONE and enrolment.consented_at and enrolment.instructions_seen_at
    assert Annotation.objects.filter(annotator=enrolment.user).count() == 2
    context.close()
