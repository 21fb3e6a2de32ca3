"""A real browser rates an item with the keyboard only, sees the caps change live, and edits.

Drives Debian's Chromium with Playwright against the live server.
"""

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from annotator.models import Annotation, AnnotationRevision
from tests.browser.conftest import CHROMIUM, htmx_settled, rating_ready
from tests.factories import PASSWORD, make_batch, make_user

OUTPUT = Path(__file__).resolve().parents[2] / "test-output" / "browser"
WAIT = 30_000  # ms: what the page fixture allows (expect's own default is 5 s, short on a busy machine)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)"),
]


def allowed_scores(page, dimension: str) -> list[int]:
    inputs = page.locator(f'input[name="score_{dimension}"]')
    return [
        int(inputs.nth(i).get_attribute("value")) for i in range(inputs.count()) if inputs.nth(i).is_enabled()
    ]


@pytest.mark.django_db(transaction=True)
def test_rate_with_the_keyboard_then_edit(page, live_server):
    batch = make_batch("city-routes", n_items=3, constraints=("avoid tolls", "arrive before 8AM"))
    batch.items.update(
        prompt="Plan a route to the airport avoiding tolls; I must arrive before 8AM.",
        response="Take Route 9 south (no tolls), leave by 6:45.\nAllow 15 extra minutes for rain.",
    )
    user = make_user("keyboard-kim")

    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", PASSWORD)
    page.press("#id_password", "Enter")
    OUTPUT.mkdir(parents=True, exist_ok=True)
    assert "0 / 3 items complete" in page.locator("table.queue").inner_text()
    page.screenshot(path=str(OUTPUT / "home-queue.png"))
    page.get_by_role("link", name="Start").click()
    rating_ready(page)
    first_item = page.locator(".rate-where strong").inner_text()
    assert first_item == "Item 1"  # a neutral label, never the file's item id

    # Keyboard only from here. Focus starts on the first hard constraint.
    expect(page.locator('input[name="constraint_0"]').first).to_be_focused(timeout=WAIT)
    keys = page.keyboard
    keys.press("n")  # avoid tolls: not met
    keys.press("Enter")  # too early: the server's errors are swapped in, the answer kept
    htmx_settled(page, ".rate-errors")
    assert "Coherence needs a score." in page.locator(".rate-errors").inner_text()
    assert page.locator('input[name="constraint_0"][value="not_met"]').is_checked()
    assert Annotation.objects.count() == 0
    keys.press("n")  # focus is on the first unanswered row: arrive before 8AM, not met
    assert allowed_scores(page, "instruction_following") == [1, 2]
    assert "2 at most" in page.locator("#derived-flags").inner_text()
    keys.press("ArrowUp")
    keys.press("ArrowUp")
    keys.press("y")  # avoid tolls: met -> partial compliance
    assert allowed_scores(page, "instruction_following") == [2, 3]
    assert allowed_scores(page, "coherence") == [1, 2, 3, 4, 5]
    keys.press("ArrowDown")  # to Coherence
    keys.press("4")
    keys.press("4")
    keys.press(
        "1"
    )  # refused on Instruction-Following (2-3 only): said next to the row, the row stays current
    refused = page.locator('.dim-row[data-dimension="instruction_following"] .key-refused')
    assert refused.inner_text().startswith("1 is not allowed here: 2\u20133 only (")
    for key in "354":  # I, S, F, each moving on to the next
        keys.press(key)
    assert refused.count() == 0  # gone once the row has an allowed score
    keys.press("?")
    expect(page.locator("#help-dialog")).to_be_visible(timeout=WAIT)
    keys.press("Escape")
    expect(page.locator("#help-dialog")).to_be_hidden(timeout=WAIT)
    page.screenshot(path=str(OUTPUT / "rate-page.png"), full_page=True)
    keys.press("Enter")

    htmx_settled(page, ".message.success")
    assert "Saved your rating." in page.locator(".message.success").inner_text()
    assert page.locator(".rate-where strong").inner_text() == "Item 2"
    expect(page).to_have_title(re.compile(r"^Rate item 2\b"), timeout=WAIT)
    annotation = Annotation.objects.get(annotator=user)
    assert annotation.flags == ["partial_compliance"]
    assert annotation.constraints_met == [True, False]
    assert dict(annotation.scores.values_list("dimension", "value")) == {
        "coherence": 4,
        "relevance": 4,
        "instruction_following": 3,
        "safety_compliance": 5,
        "fluency": 4,
    }
    assert annotation.started_at is not None and annotation.seconds_on_item > 0

    # Skip the second item with a reason, from the keyboard.
    keys.press("s")
    # Typed only once the reason box has the focus: keys sent before would act on the form's rows.
    expect(page.locator("#skip-reason")).to_be_focused(timeout=WAIT)
    keys.type("not my region")
    expect(page.locator("#skip-reason")).to_have_value("not my region", timeout=WAIT)
    keys.press("Enter")
    htmx_settled(page, ".message.info")
    assert page.locator(".rate-where strong").inner_text() == "Item 2"  # a skip takes no number in the list

    # Reopen the first annotation and change it.
    page.goto(f"{live_server.url}/annotate/{batch.pk}/mine/")
    page.get_by_role("link", name="Edit").click()
    rating_ready(page)
    assert page.locator('input[name="score_coherence"][value="4"]').is_checked()
    assert allowed_scores(page, "instruction_following") == [2, 3]
    page.mouse.move(0, 0)  # off the score panel: a hovered level rewrites its row's description
    page.locator('label.level:has(input[name="score_coherence"][value="2"])').click()
    expect(page.locator('input[name="score_coherence"][value="2"]')).to_be_checked(timeout=WAIT)
    page.get_by_role("button", name="Save changes").click()
    # The edit is saved when its own message is on the page it returns to, not at any success message.
    expect(page).to_have_url(re.compile(rf"/annotate/{batch.pk}/mine/$"), timeout=WAIT)
    expect(page.locator(".message.success")).to_have_text("Saved your changes.", timeout=WAIT)
    annotation.refresh_from_db()
    assert annotation.scores.get(dimension="coherence").value == 2
    assert AnnotationRevision.objects.get(annotation=annotation).old_scores["coherence"] == 4
