"""A real browser: the Studies page's Prolific review form keeps what was typed after an error, the
chosen bonus file included (as its rows: a browser never fills a file field in again), so the
corrected form goes out without typing or choosing anything twice."""

from __future__ import annotations

import pytest

from annotator.studies.prolific import views
from tests.annotator.studies.prolific_fake import STUDY, Fake, worker
from tests.browser.conftest import CHROMIUM, signed_in_context
from tests.factories import make_batch, make_user

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)"),
]

A = "a" * 24


@pytest.mark.django_db(transaction=True)
def test_the_prolific_form_keeps_what_was_typed_after_an_error(chromium, live_server, tmp_path, monkeypatch):
    batch = make_batch("prolific walk", n_items=4)
    worker(batch, A, session="subA")
    fake = Fake()
    fake.add("subA", A)
    monkeypatch.setattr(views, "client_factory", fake.client)
    context = signed_in_context(chromium, live_server, make_user("walk-admin", role="admin"))
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.goto(f"{live_server.url}/studies/")
    rows = tmp_path / "bonus.csv"
    rows.write_text(f"participant_id,amount,reason\n{A},1.50,best rater\n")
    form = page.locator("#prolific form")
    form.locator("select[name=batch]").select_option(label=batch.name)
    form.locator("input[name=study_id]").fill("not/an/id")
    form.locator("input[name=approve]").check()
    form.locator("input[name=max_rejection_rate]").fill("7.5")
    form.locator("input[name=bonus_csv]").set_input_files(str(rows))
    form.locator("button[type=submit]").click()
    page.wait_for_selector("#prolific .errorlist")
    form = page.locator("#prolific form")
    assert form.locator("input[name=study_id]").input_value() == "not/an/id"
    assert form.locator("input[name=approve]").is_checked()
    assert form.locator("input[name=dry_run]").is_checked()
    assert form.locator("input[name=max_rejection_rate]").input_value() == "7.5"
    assert form.locator("textarea[name=bonus_rows]").input_value() == rows.read_text()
    assert fake.requests == []
    form.locator("input[name=study_id]").fill(STUDY)
    form.locator("button[type=submit]").click()
    page.wait_for_selector("#prolific .prolific-lines")
    lines = page.locator("#prolific .prolific-lines").inner_text()
    assert "would approve" in lines and f"would pay bonus best rater 1.50 to {A}" in lines
    assert {m for m, _, _ in fake.requests} == {"GET"}
    context.close()
