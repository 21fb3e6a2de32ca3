"""In Chromium: a score row's level description follows the focus while it is in the row, and when
the focus leaves a row with nothing chosen the row shows its own description again (by keyboard and
by a click elsewhere); a chosen level's description stays."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.browser.conftest import CHROMIUM, rating_ready, signed_in_context
from tests.factories import make_batch, make_user

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)"),
]


def text_of(page, dimension: str) -> str:
    return page.locator(f'.dim-row[data-dimension="{dimension}"] .level-text').inner_text()


def default_of(page, dimension: str) -> str:
    return page.locator(f'.dim-row[data-dimension="{dimension}"] .level-text').get_attribute("data-default")


@pytest.mark.parametrize("viewport", [{"width": 1360, "height": 1000}, {"width": 390, "height": 844}])
@pytest.mark.django_db(transaction=True)
def test_the_description_leaves_with_the_focus_when_nothing_is_chosen(chromium, live_server, viewport):
    batch = make_batch("levels", n_items=2, constraints=())
    page = signed_in_context(chromium, live_server, make_user("rater"), viewport=viewport).new_page()
    page.set_default_timeout(30_000)
    page.goto(live_server.url + reverse("annotate_next", args=[batch.pk]))
    rating_ready(page)
    default = default_of(page, "coherence")  # the page starts with the focus in this first row

    # Keyboard: the focus on level 3 shows its description; moving to the next row takes it away.
    page.focus('input[name="score_coherence"][value="3"]')
    assert text_of(page, "coherence").startswith("3 \u00b7 ")
    page.keyboard.press("ArrowDown")
    assert page.evaluate("document.activeElement.name") == "score_relevance"
    assert text_of(page, "coherence") == default
    assert not page.locator('input[name="score_coherence"]:checked').count()

    # Mouse: a click elsewhere on the page takes the focus, and the description, away too.
    page.focus('input[name="score_relevance"][value="2"]')
    assert text_of(page, "relevance").startswith("2 \u00b7 ")
    page.click('[data-field="prompt"]')
    assert text_of(page, "relevance") == default_of(page, "relevance")

    # A chosen level keeps its description after the focus moves on (the key scores and moves).
    page.focus('input[name="score_coherence"][value="1"]')
    page.keyboard.press("4")
    assert page.locator('input[name="score_coherence"][value="4"]').is_checked()
    page.click('[data-field="prompt"]')
    assert text_of(page, "coherence").startswith("4 \u00b7 ")
