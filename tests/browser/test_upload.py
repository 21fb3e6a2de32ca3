"""A real browser: an admin uploads a bad batch file, reads the errors, then uploads a good one and confirms.

Drives Debian's Chromium with Playwright against the live server.
"""

from pathlib import Path

import pytest

from annotator.models import Batch
from tests.browser.conftest import CHROMIUM
from tests.factories import PASSWORD, make_user, upload_storage_at

OUTPUT = Path(__file__).resolve().parents[2] / "test-output" / "browser"
DEMO_ITEMS = Path(__file__).resolve().parents[2] / "fixtures" / "demo" / "items.jsonl"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)"),
]


@pytest.fixture(autouse=True)
def uploads(settings, tmp_path):
    upload_storage_at(settings, tmp_path / "uploads")


@pytest.mark.django_db(transaction=True)
def test_admin_uploads_a_batch_with_preview_and_confirm(page, live_server, tmp_path):
    admin = make_user("upload-admin", role="admin")
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", admin.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.click("text=Upload a batch or offline annotations")

    bad = tmp_path / "bad.csv"
    bad.write_text(
        "item_id,prompt,response,system_id\nr1,Avoid tolls to the airport,Route 9,a\nr1,Avoid tolls,,b\n"
    )
    form = page.locator("#upload-batch form")
    form.locator("input[name=name]").fill("browser batch")
    form.locator("input[name=file]").set_input_files(str(bad))
    form.locator("button[type=submit]").click()
    page.wait_for_selector("#upload-errors tr.row-error")
    errors = page.locator("#upload-errors tr.row-error")
    assert errors.count() == 2
    assert errors.nth(0).inner_text().split("\t")[:2] == ["3", "item_id"]
    assert "nothing will be saved" in page.locator("#upload-errors h2").inner_text()
    assert page.locator("text=Confirm and save").count() == 0
    OUTPUT.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(OUTPUT / "upload_errors.png"), full_page=True)

    page.goto(f"{live_server.url}/uploads/")
    form = page.locator("#upload-batch form")
    form.locator("input[name=name]").fill("browser batch")
    form.locator("input[name=file]").set_input_files(str(DEMO_ITEMS))
    form.locator("button[type=submit]").click()
    assert "navigator-v2 (12)" in page.locator("table.facts").inner_text()
    page.screenshot(path=str(OUTPUT / "upload_preview.png"), full_page=True)
    assert Batch.objects.count() == 0
    page.click("text=Confirm and save 36 rows")
    assert "created with 36 items" in page.locator(".messages").inner_text()
    assert Batch.objects.get(name="browser batch").items.count() == 36

    # Then: links to the batch's report, its assignment and a study link for it; the new study link
    # has a Copy button that copies it.
    batch = Batch.objects.get(name="browser batch")
    saved = page.locator("#upload-saved")
    assert saved.locator(f'a[href="/reports/{batch.pk}/"]').count() == 1
    assert saved.locator(f'a[href="/assignment/{batch.pk}/"]').count() == 1
    page.screenshot(path=str(OUTPUT / "upload_saved.png"), full_page=True)
    saved.locator("text=Make a study link for it").click()
    form = page.locator("#new-study-link form")
    assert form.locator("select[name=batch]").input_value() == str(batch.pk)
    form.locator("input[name=completion_code]").fill("CC-UPLOAD")
    form.locator("button[type=submit]").click()
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    made = page.locator("#made")
    made.locator("button.copy-code").click()
    page.wait_for_function("document.querySelector('#made .copy-state').textContent.length > 0")
    url = made.locator("code.link-url").inner_text()
    assert "/study/" in url and page.evaluate("navigator.clipboard.readText()") == url
    page.screenshot(path=str(OUTPUT / "study_link_copy.png"), full_page=True)
