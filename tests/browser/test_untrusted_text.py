"""In a real browser, hostile text is inert on every page that shows it and in the HTML export:
no dialog opens (``alert(1)`` in every payload would open one) and no injected element exists.

Pages: the rating page (and the next item swapped in by htmx after a submit), the history and edit
pages, the report, every item's adjudication page, the judges page, the assignment page, the
upload preview, and the HTML export loaded as a page. Drives Debian's Chromium with Playwright.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from annotator.models import Annotation
from tests.annotator import hostile
from tests.browser.conftest import rating_ready, signed_in_context
from tests.factories import upload_storage_at

pytestmark = pytest.mark.browser

OUTPUT = Path(__file__).resolve().parents[2] / "test-output" / "browser"

# Elements or attributes only an injection would create (the app has no inline script and no
# inline event handler; its JSON data block has type="application/json").
INJECTED = """() => {
  const found = [];
  for (const el of document.querySelectorAll('*')) {
    for (const attr of el.getAttributeNames()) {
      if (attr.startsWith('on')) found.push(`${el.tagName} ${attr}`);
    }
  }
  for (const s of document.querySelectorAll('script')) {
    if (!s.src && s.type !== 'application/json') found.push('inline script: ' + s.textContent.slice(0, 40));
  }
  for (const sel of ['iframe', 'img[src="x"]', 'svg[onload]', 'details[ontoggle]', 'a[href^="javascript:"]', 'b']) {
    for (const el of document.querySelectorAll(sel)) found.push(sel);
  }
  return found;
}"""


class Watch:
    """Dialogs opened on a page (each is dismissed, so a failure does not hang the test)."""

    def __init__(self, page):
        self.dialogs: list[str] = []
        page.on("dialog", self._on_dialog)

    def _on_dialog(self, dialog):
        self.dialogs.append(dialog.message)
        dialog.dismiss()


def check(page, watch: Watch, where: str, *, shows_payload: bool = True) -> None:
    page.wait_for_load_state("load")
    page.wait_for_timeout(100)  # let deferred scripts and any onerror handlers run
    assert watch.dialogs == [], f"{where}: a dialog opened: {watch.dialogs}"
    assert page.evaluate(INJECTED) == [], f"{where}: injected elements"
    if shows_payload:
        # The payload is on the page as text a person can read.
        assert (
            "<script>alert(1)</script>" in page.locator("body").inner_text()
            or hostile.SHORT in page.locator("body").inner_text()
        ), f"{where}: hostile text not shown"


@pytest.mark.django_db(transaction=True)
def test_hostile_text_is_inert_on_every_page(chromium, live_server, settings, tmp_path):
    upload_storage_at(settings, tmp_path / "uploads")
    world = hostile.build()
    batch, items = world["batch"], world["items"]
    url = live_server.url
    OUTPUT.mkdir(parents=True, exist_ok=True)

    # The annotator: queue, rating page, a submit that swaps in the next hostile item, history, edit.
    context = signed_in_context(chromium, live_server, world["users"]["annotator"])
    page = context.new_page()
    page.set_default_timeout(30_000)  # generous: CI machines can be busy
    watch = Watch(page)
    page.goto(url + reverse("annotate_queue"))
    check(page, watch, "queue")
    page.goto(url + reverse("annotate_next", args=[batch.pk]))
    rating_ready(page)
    check(page, watch, "rating page")
    page.screenshot(path=str(OUTPUT / "untrusted_rating_page.png"), full_page=True)
    first = page.locator(".rate-where strong").inner_text()
    for dimension in hostile.DIMENSIONS:
        page.locator(f'input[name="score_{dimension}"][value="4"]').check(force=True)
    for i in range(2):
        page.locator(f'input[name="constraint_{i}"][value="met"]').check(force=True)
    page.locator("#rate-form button[type=submit]:not(#skip-btn)").first.click()
    page.wait_for_function(f"() => document.querySelector('.rate-where strong')?.innerText !== {first!r}")
    assert Annotation.objects.filter(annotator=world["users"]["annotator"]).count() == 2
    check(page, watch, "rating page after an htmx submit")
    page.goto(url + reverse("annotate_mine", args=[batch.pk]))
    check(page, watch, "history")
    page.goto(url + reverse("annotation_edit", args=[world["own"].pk]))
    check(page, watch, "edit page")
    assert hostile.text("own comment") == page.locator("#id_comment").input_value()
    context.close()

    # The researcher: report, every item's adjudication page, judges page, the HTML export.
    context = signed_in_context(chromium, live_server, world["users"]["researcher"])
    page = context.new_page()
    page.set_default_timeout(30_000)  # generous: CI machines can be busy
    watch = Watch(page)
    for where, path in [
        ("report list", reverse("report_list")),
        ("report", reverse("report_batch", args=[batch.pk])),
        *[(f"item {item.pk}", reverse("report_item", args=[item.pk])) for item in items],
        ("judges page", reverse("judges")),
    ]:
        page.goto(url + path)
        check(page, watch, where)
    client = Client()
    client.force_login(world["users"]["researcher"])
    export = client.get(reverse("report_export", args=[batch.pk, "html"]))
    assert export.status_code == 200
    page.set_content(export.content.decode())
    check(page, watch, "HTML export")
    context.close()

    # The admin: assignment pages (skip reasons) and the upload preview of a hostile file.
    context = signed_in_context(chromium, live_server, world["users"]["admin"])
    page = context.new_page()
    page.set_default_timeout(30_000)  # generous: CI machines can be busy
    watch = Watch(page)
    page.goto(url + reverse("assignment_batch", args=[batch.pk]))
    check(page, watch, "assignment page")
    page.goto(url + reverse("upload"))
    upload = tmp_path / "hostile.csv"
    upload.write_bytes(hostile.hostile_upload_csv())
    form = page.locator("#upload-batch form")
    form.locator("input[name=name]").fill("upload " + hostile.SHORT)
    form.locator("input[name=file]").set_input_files(str(upload))
    form.locator("button[type=submit]").click()
    page.wait_for_selector("#upload-errors")
    check(page, watch, "upload preview")
    page.screenshot(path=str(OUTPUT / "untrusted_upload_preview.png"), full_page=True)
    context.close()


@pytest.mark.django_db(transaction=True)
def test_the_check_would_see_an_injection(chromium, live_server):
    """The detector is not blind: the same payloads as raw HTML open a dialog and leave elements."""
    page = chromium.new_page()
    watch = Watch(page)
    page.set_content(f"<body><p>{hostile.HOSTILE}</p></body>")
    page.wait_for_timeout(300)
    assert watch.dialogs
    assert page.evaluate(INJECTED)
