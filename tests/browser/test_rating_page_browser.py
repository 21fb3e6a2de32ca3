"""The rating page and the report in Chromium, as people use them for hours.

- Keyboard: the flags are in the path (scores -> flags -> Submit) with their own keys; a flag
  that clears a score sends focus back to it; the shortcuts dialog takes the focus; a 422 error
  summary takes the focus.
- Phones (390 x 844): no page scrolls sideways, for every role; the rating page opens at the
  item's top; the queue's Start button is clickable.
- The report with judges: the page first, the judge section after it; plots do not overlap and
  the calibration table fits.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.urls import reverse

from annotator.judges.services.judges import judge_scores_import
from annotator.models import Annotation, Item
from hcs.judge_output import JudgeScale
from tests.browser.conftest import htmx_settled, rating_ready, signed_in_context
from tests.factories import make_annotation, make_batch, make_user

pytestmark = pytest.mark.browser

OUTPUT = Path(__file__).resolve().parents[2] / "test-output" / "browser"
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
DIMS = ("coherence", "relevance", "instruction_following", "safety_compliance", "fluency")


def _focused(page, prop: str = "name"):
    return page.evaluate(f"document.activeElement && document.activeElement.{prop}")


@pytest.mark.django_db(transaction=True)
def test_flags_are_in_the_keyboard_path_and_dialogs_take_focus(chromium, live_server):
    batch = make_batch("kb-flags", n_items=3, constraints=("avoid tolls", "arrive before 8AM"))
    user = make_user("kb-flagger")
    context = signed_in_context(chromium, live_server, user, viewport=DESKTOP)
    page = context.new_page()
    page.goto(live_server.url + reverse("annotate_next", args=[batch.pk]))
    rating_ready(page)
    assert page.evaluate("scrollY") == 0
    keys = page.keyboard
    keys.press("y")
    keys.press("y")
    for key in "55555":
        keys.press(key)
    # After the last score the focus is on the flags, in view, before Submit.
    assert _focused(page) == "flags"
    box = page.locator("fieldset.flags").bounding_box()
    assert 0 <= box["y"] and box["y"] + box["height"] <= DESKTOP["height"]
    assert page.locator("fieldset.flags kbd").all_inner_texts() == ["m", "u", "a", "c"]
    # u: unsafe suggestion caps Safety-Compliance at 2, clears the 5 and goes back to it.
    keys.press("u")
    assert page.locator('input[name="flags"][value="unsafe_suggestion"]').is_checked()
    assert _focused(page) == "score_safety_compliance"
    assert not page.locator('input[name="score_safety_compliance"]:checked').count()
    keys.press("2")
    # The shortcuts dialog is modal and takes the focus; Esc gives it back.
    before = _focused(page, "outerHTML")
    keys.press("?")
    assert page.locator("#help-dialog").get_attribute("aria-modal") == "true"
    assert page.evaluate("document.getElementById('help-dialog').contains(document.activeElement)")
    keys.press("Escape")
    assert page.locator("#help-dialog").is_hidden()
    assert _focused(page, "outerHTML") == before
    keys.press("Enter")
    htmx_settled(page, ".message.success")
    annotation = Annotation.objects.get(annotator=user)
    assert annotation.flags == ["unsafe_suggestion"]
    assert annotation.scores.get(dimension="safety_compliance").value == 2
    # Too early a submit: the error summary comes back and takes the focus.
    keys.press("Enter")
    htmx_settled(page, "#error-summary")
    # The page's script moves the focus once htmx has settled the swap, a moment after the
    # summary is in the page; wait for it (and fail after 10 s if it never comes).
    page.wait_for_function(
        "document.activeElement && document.activeElement.id === 'error-summary'", timeout=10_000
    )
    assert _focused(page, "id") == "error-summary"
    keys.press("y")  # the keys still act on the first unanswered row
    assert page.locator('input[name="constraint_0"][value="met"]').is_checked()
    # Dark mode follows the system setting; the icon is linked (no 404 for /favicon.ico).
    background = "getComputedStyle(document.documentElement).backgroundColor"
    assert page.evaluate(background) == "rgb(247, 247, 245)"
    page.emulate_media(color_scheme="dark")
    assert page.evaluate(background) == "rgb(22, 23, 26)"
    assert page.evaluate("getComputedStyle(document.querySelector('.card')).color") == "rgb(230, 231, 234)"
    assert page.locator('link[rel="icon"]').count() == 1
    context.close()


def _world():
    """A batch three people rated, one annotation of the phone user, and a judge. Its name is long and has no
    spaces (names come from uploads): it must wrap, not widen the pages."""
    batch = make_batch("phone-batch-" + "N" * 150, n_items=6, systems=("sys-a", "sys-b"))
    Item.objects.filter(batch=batch).update(
        conversation=[{"role": "user", "content": "An earlier turn " * 20}]
    )
    raters = [make_user(f"rater{i}") for i in range(3)]
    items = list(Item.objects.filter(batch=batch))
    for n, item in enumerate(items[:4]):
        for i, rater in enumerate(raters):
            make_annotation(item, rater, {d: 1 + (n + i) % 5 for d in DIMS}, comment="fine " * 30)
    csv = "item_id,dimension,score\n" + "".join(
        f"{i.item_id},{d},{1 + n % 5}\n" for n, i in enumerate(items[:4]) for d in DIMS
    )
    judge_scores_import(
        batch=batch, judge_name="phone-judge", data=csv.encode(), filename="j.csv", scale=JudgeScale(1, 5)
    )
    return batch, items


def _no_sideways_scroll(page, url: str) -> None:
    page.goto(url)
    page.wait_for_load_state("networkidle")
    if page.locator("#judges[hx-get]").count():
        page.wait_for_selector("#judges table", timeout=60_000)
    width, inner = page.evaluate("[document.documentElement.scrollWidth, innerWidth]")
    assert width <= inner, f"{url}: {width}px wide at {inner}px"


@pytest.mark.django_db(transaction=True)
def test_no_page_scrolls_sideways_on_a_phone_for_any_role(chromium, live_server):
    batch, items = _world()
    annotator = make_user("phone-annotator")
    researcher = make_user("phone-researcher", role="researcher")
    admin = make_user("phone-admin", role="admin")
    url = live_server.url

    # The annotator: queue (Start clickable, not covered), rating page at its top, history, edit.
    context = signed_in_context(chromium, live_server, annotator, viewport=PHONE)
    page = context.new_page()
    _no_sideways_scroll(page, url + reverse("home"))
    page.get_by_role("link", name="Start").click()  # fails if anything intercepts the click
    rating_ready(page)
    assert page.evaluate("scrollY") == 0  # opens at the item's top: the prompt, not the scores
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    OUTPUT.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(OUTPUT / "rate-phone.png"))
    for key in "yy55555":
        page.keyboard.press(key)
    page.keyboard.press("Enter")
    page.wait_for_selector(".message.success")
    page.wait_for_function("scrollY === 0", timeout=5_000)  # the next item, from its top
    mine = Annotation.objects.get(annotator=annotator)
    for path in (
        reverse("annotate_queue"),
        reverse("rubric"),
        reverse("annotate_next", args=[batch.pk]),
        reverse("annotate_mine", args=[batch.pk]),
        reverse("annotation_edit", args=[mine.pk]),
    ):
        _no_sideways_scroll(page, url + path)
    context.close()

    context = signed_in_context(chromium, live_server, researcher, viewport=PHONE)
    page = context.new_page()
    for path in (
        reverse("home"),
        reverse("report_list"),
        reverse("report_batch", args=[batch.pk]),
        reverse("report_item", args=[items[0].pk]),
        reverse("judges"),
    ):
        _no_sideways_scroll(page, url + path)
    context.close()

    context = signed_in_context(chromium, live_server, admin, viewport=PHONE)
    page = context.new_page()
    for path in (
        reverse("home"),
        reverse("upload"),
        reverse("assignment_overview"),
        reverse("assignment_batch", args=[batch.pk]),
    ):
        _no_sideways_scroll(page, url + path)
    context.close()


@pytest.mark.django_db(transaction=True)
def test_report_shows_at_once_and_the_judge_plots_neither_overlap_nor_clip(chromium, live_server):
    batch, _ = _world()
    researcher = make_user("desk-researcher", role="researcher")
    context = signed_in_context(chromium, live_server, researcher, viewport=DESKTOP)
    page = context.new_page()
    page.goto(live_server.url + reverse("report_batch", args=[batch.pk]))
    assert page.locator("#judges").count() == 1  # the placeholder, or the section already swapped in
    page.wait_for_selector("#judges table", timeout=60_000)
    boxes = page.evaluate("""() => [...document.querySelectorAll('#judges .plots img.chart')].map(img => {
        const r = img.getBoundingClientRect(), f = img.closest('figure').getBoundingClientRect();
        return [r.left, r.top, r.right, r.bottom, f.left, f.right];
    })""")
    assert len(boxes) == 10  # scatter + confusion for each of the 5 dimensions
    for i, (left, top, right, bottom, f_left, f_right) in enumerate(boxes):
        assert f_left - 0.5 <= left and right <= f_right + 0.5, "a plot spills out of its figure"
        for other in boxes[i + 1 :]:
            apart = right <= other[0] or other[2] <= left or bottom <= other[1] or other[3] <= top
            assert apart, "two plots overlap"
    # The calibration table fits its box: the alt-test column is not cut off.
    fits = page.evaluate("""() => [...document.querySelectorAll('#judges .table-scroll')]
        .map(d => d.scrollWidth <= d.clientWidth || [d.scrollWidth, d.clientWidth])""")
    assert fits and all(f is True for f in fits), fits
    assert "not testable yet" in page.locator("#judges").inner_text()
    context.close()
