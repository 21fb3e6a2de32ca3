"""The judges' calibration on a phone (390 px): in the report, where htmx swaps it in, and as the page
the report's no-JavaScript link opens. Wide tables scroll inside their box; the page never scrolls
sideways."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.annotator.judges.test_ppi_report import study  # noqa: F401 (a fixture: two systems, labels, a judge)
from tests.browser.conftest import CHROMIUM, signed_in_context

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)"),
]

PHONE = {"width": 390, "height": 844}


def _fits(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]


@pytest.mark.django_db(transaction=True)
def test_the_judges_calibration_fits_a_phone_in_the_report_and_on_its_own(
    chromium,
    live_server,
    researcher_user,
    study,  # noqa: F811
):
    batch, _judge, _, _ = study
    page = signed_in_context(chromium, live_server, researcher_user, viewport=PHONE).new_page()

    page.goto(live_server.url + reverse("report_batch", args=[batch.pk]))
    page.wait_for_selector("table.ppi-systems")
    assert page.locator(".table-scroll > table.ppi-systems").count() >= 1
    assert page.locator("header").count() == 1  # the swap brought the sections, not a second page
    assert _fits(page)

    page.goto(live_server.url + reverse("report_judges", args=[batch.pk]))
    assert page.locator("link[href$='css/app.css']").count() == 1
    assert "LLM judges against people" in page.locator("h1").inner_text()
    assert page.locator(f"a[href='{reverse('report_batch', args=[batch.pk])}']").count() >= 1
    page.wait_for_selector("table.ppi-systems")
    assert _fits(page)
