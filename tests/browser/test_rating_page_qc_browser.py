"""In Chromium: the rubric opens beside the item (desktop) or under it (phone) without scrolling the
item away, the training feedback takes the focus so Continue is one Tab away, and table words are
not broken mid-word."""

import pytest
from django.urls import reverse

from annotator.models import QualityRule
from tests.browser.conftest import (
    CHROMIUM,
    htmx_settled,
    rating_ready,
    signed_in_context,
)
from tests.factories import make_annotation, make_batch, make_gold_items, make_user

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)"),
]
DESKTOP, PHONE = {"width": 1280, "height": 900}, {"width": 390, "height": 844}
DIMS = ("coherence", "relevance", "instruction_following", "safety_compliance", "fluency")
EXPERT = dict(zip(DIMS, [4, 3, 2, 4, 5]))


def _prompt_in_view(page) -> bool:
    return page.evaluate("""() => {
        const prompt = document.querySelector('[data-field=prompt]').getBoundingClientRect();
        const sheet = document.getElementById('rubric-drawer').getBoundingClientRect();
        const bottom = sheet.top > 0 ? sheet.top : innerHeight;  // a bottom sheet covers from its top
        const right = sheet.top > 0 ? innerWidth : sheet.left;  // a side sheet covers from its left
        return prompt.top >= 0 && prompt.top + 20 <= bottom && prompt.left < right;
    }""")


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_r_opens_the_rubric_and_keeps_the_item_in_view(chromium, live_server, viewport):
    batch = make_batch("rubric-r", n_items=2, constraints=())
    context = signed_in_context(chromium, live_server, make_user("r-key"), viewport=viewport)
    page = context.new_page()
    page.goto(live_server.url + reverse("annotate_next", args=[batch.pk]))
    rating_ready(page)
    page.keyboard.press("r")
    assert page.evaluate("document.getElementById('rubric-drawer').open")
    assert _prompt_in_view(page)
    page.keyboard.press("Escape")
    assert not page.evaluate("document.getElementById('rubric-drawer').open")
    page.keyboard.press("3")  # the keys act on the form again: the first score is chosen
    assert page.locator('input[name="score_coherence"][value="3"]').is_checked()
    context.close()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_training_feedback_takes_the_focus_and_continue_is_one_tab_away(chromium, live_server, viewport):
    batch = make_batch("feedback-focus", n_items=2, constraints=())
    QualityRule.objects.create(batch=batch, training_items=1, check_every=0)
    make_gold_items(
        batch,
        "training",
        1,
        item_id="gold-secret",
        prompt="Train me",
        response="r",
        scores=EXPERT,
        flags=[],
        explanation="Because.",
    )
    context = signed_in_context(chromium, live_server, make_user("focus"), viewport=viewport)
    page = context.new_page()
    page.goto(live_server.url + reverse("annotate_next", args=[batch.pk]))
    rating_ready(page)
    for d, v in EXPERT.items():
        page.check(f'input[name="score_{d}"][value="{v}"]')
    page.click("#submit-btn")
    htmx_settled(page, ".training-feedback")
    assert page.evaluate("document.activeElement.id") == "feedback-heading"
    assert "gold-secret" not in page.content()
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "continue"
    context.close()


@pytest.mark.django_db(transaction=True)
def test_table_words_are_not_broken_on_a_phone(chromium, live_server):
    batch = make_batch("words", n_items=3, constraints=())
    raters = [make_user(f"annotator{i}") for i in range(3)]
    for item in batch.items.all():
        for rater in raters:
            make_annotation(item, rater, {d: 3 for d in DIMS})
    context = signed_in_context(chromium, live_server, make_user("reader", role="researcher"), viewport=PHONE)
    page = context.new_page()
    page.goto(live_server.url + reverse("report_batch", args=[batch.pk]))
    page.wait_for_load_state("networkidle")
    broken = page.evaluate("""() => [...document.querySelectorAll('main th, main td')].flatMap(cell => {
        const out = [];
        const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
            for (const m of node.textContent.matchAll(/[A-Za-z]{4,}/g)) {
                const range = document.createRange();
                range.setStart(node, m.index); range.setEnd(node, m.index + m[0].length);
                if (new Set([...range.getClientRects()].map(r => Math.round(r.top))).size > 1) out.push(m[0]);
            }
        }
        return out; })""")
    assert broken == []
    context.close()
