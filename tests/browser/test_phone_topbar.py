"""The top bar on a phone (390 px): the brand and Log out on one line, every link of the admin's eight
in at most two lines across the full width below (they stacked in a narrow column beside Log out)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.browser.conftest import CHROMIUM, signed_in_context
from tests.factories import make_user

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)"),
]

PHONE = {"width": 390, "height": 844}


@pytest.mark.django_db(transaction=True)
def test_the_admins_top_bar_wraps_compactly_on_a_phone(chromium, live_server):
    page = signed_in_context(chromium, live_server, make_user("adm", role="admin"), viewport=PHONE).new_page()
    page.goto(live_server.url + reverse("upload"))
    links = page.locator("header.topbar nav a")
    boxes = [links.nth(i).bounding_box() for i in range(links.count())]
    assert links.count() == 9 and {"Studies", "Streams"} <= set(links.all_inner_texts())
    assert all(0 <= box["x"] and box["x"] + box["width"] <= PHONE["width"] for box in boxes)  # all in sight
    assert len({round(box["y"]) for box in boxes}) <= 2
    brand = page.locator("header.topbar .brand").bounding_box()
    logout = page.locator("header.topbar .logout").bounding_box()
    assert abs(brand["y"] - logout["y"]) < brand["height"]  # one line
    assert page.locator("header.topbar").bounding_box()["height"] < 110
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
