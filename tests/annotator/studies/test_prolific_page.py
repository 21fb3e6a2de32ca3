"""The Studies page's Prolific review: the command's options as a form, its lines on the page, and
a clear answer (never a 500) to bad input or a refused token."""

from __future__ import annotations

import httpx
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from annotator.models import ProlificBonus
from annotator.studies.prolific import views
from annotator.studies.prolific.client import ProlificClient
from tests.annotator.studies.prolific_fake import STUDY, Fake, worker
from tests.factories import PASSWORD, make_batch

pytestmark = pytest.mark.django_db

A = "a" * 24


@pytest.fixture
def page(admin_user, monkeypatch):
    batch = make_batch("page", n_items=4)
    worker(batch, A, session="subA")
    fake = Fake()
    fake.add("subA", A)
    monkeypatch.setattr(views, "client_factory", fake.client)
    client = Client()
    client.login(username=admin_user.username, password=PASSWORD)
    return client, batch, fake


def post(client, batch, **fields):
    data = {"batch": batch.pk, "study_id": STUDY, "max_rejection_rate": "10", **fields}
    return client.post(reverse("prolific_review"), data)


def test_the_page_shows_the_form(page):
    client, _batch, _fake = page
    html = client.get(reverse("studies")).content.decode()
    assert "Review on Prolific" in html and 'action="/studies/prolific-review/"' in html


def test_a_dry_run_shows_the_plan_and_sends_nothing(page):
    client, batch, fake = page
    response = post(client, batch, approve="on", dry_run="on", bonus_per_item="0.05")
    html = response.content.decode()
    assert response.status_code == 200
    assert "Dry run for page: nothing was sent." in html and "would approve" in html and "0.10" in html
    assert {m for m, _, _ in fake.requests} == {"GET"} and not ProlificBonus.objects.exists()


def test_a_real_run_approves_and_pays(page):
    client, batch, fake = page
    response = post(client, batch, approve="on", bonus_per_item="0.05")
    assert response.status_code == 200 and "Done for page." in response.content.decode()
    assert fake.submissions["subA"]["status"] == "APPROVED" and fake.paid == {A: [10]}
    post(client, batch, approve="on", bonus_per_item="0.05")
    assert fake.paid == {A: [10]}


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"study_id": "../../x"}, "Use the study id"),
        ({"bonus_per_item": "lots"}, "not a number"),
        ({"max_rejection_rate": "250"}, "less than or equal to 100"),
    ],
)
def test_bad_input_is_a_422_that_sends_nothing(page, fields, message):
    client, batch, fake = page
    response = post(client, batch, **fields)
    assert response.status_code == 422 and message in response.content.decode()
    assert fake.requests == []


def test_both_bonus_kinds_are_refused(page):
    client, batch, fake = page
    upload = SimpleUploadedFile(
        "b.csv", f"participant_id,amount\n{A},1.00\n".encode(), content_type="text/csv"
    )
    response = client.post(
        reverse("prolific_review"),
        {
            "batch": batch.pk,
            "study_id": STUDY,
            "max_rejection_rate": "10",
            "bonus_per_item": "0.05",
            "bonus_csv": upload,
        },
    )
    assert response.status_code == 422 and "not both" in response.content.decode()
    assert fake.requests == []


def test_a_bad_bonus_file_names_its_rows(page):
    client, batch, fake = page
    upload = SimpleUploadedFile("b.csv", b"participant_id,amount\n=cmd(),1.00\n", content_type="text/csv")
    response = client.post(
        reverse("prolific_review"),
        {"batch": batch.pk, "study_id": STUDY, "max_rejection_rate": "10", "bonus_csv": upload},
    )
    assert response.status_code == 422 and "row 2, column `participant_id`" in response.content.decode()


def test_a_refused_token_is_a_502_naming_the_setting(page, monkeypatch):
    client, batch, fake = page
    monkeypatch.setattr(
        views,
        "client_factory",
        lambda: ProlificClient(
            token="nope", base_url="https://prolific.test", transport=httpx.MockTransport(fake)
        ),
    )
    response = post(client, batch, approve="on")
    assert response.status_code == 502 and "PROLIFIC_API_TOKEN" in response.content.decode()
    assert "nope" not in response.content.decode()


def test_prolific_down_is_a_502_not_a_500(page):
    client, batch, fake = page
    fake.fail("GET", r"/api/v1/studies/.*", *([503] * 10))
    response = post(client, batch, approve="on")
    assert response.status_code == 502 and "503" in response.content.decode()


def test_the_form_keeps_what_was_typed_and_the_chosen_file_after_an_error(page):
    """A browser never fills a file input in again: the file's rows come back as text, with every
    other field as typed, and the next try (fixed) sends them without choosing the file again."""
    client, batch, fake = page
    rows = f"participant_id,amount,reason\n{A},1.50,best rater\n"
    upload = SimpleUploadedFile("b.csv", rows.encode(), content_type="text/csv")
    response = client.post(
        reverse("prolific_review"),
        {
            "batch": batch.pk,
            "study_id": "../x",
            "max_rejection_rate": "7.5",
            "approve": "on",
            "bonus_csv": upload,
        },
    )
    assert response.status_code == 422 and fake.requests == []
    form = response.context["prolific_form"]
    assert form["bonus_rows"].value() == rows
    html = response.content.decode()
    assert f"{A},1.50,best rater" in html and 'value="7.5"' in html and 'value="../x"' in html
    assert 'name="approve" id="id_approve" checked' in html and 'name="dry_run" id="id_dry_run">' in html
    again = post(client, batch, approve="on", dry_run="on", max_rejection_rate="7.5", bonus_rows=rows)
    assert again.status_code == 200
    assert f"would pay bonus best rater 1.50 to {A}" in again.content.decode()
    assert again.context["prolific_form"]["bonus_rows"].value() == rows  # a dry run first, then the real run


def test_bad_rows_come_back_to_be_corrected(page):
    client, batch, fake = page
    upload = SimpleUploadedFile(
        "b.csv", f"participant_id,amount\n{A},lots\n".encode(), content_type="text/csv"
    )
    response = client.post(
        reverse("prolific_review"),
        {"batch": batch.pk, "study_id": STUDY, "max_rejection_rate": "10", "bonus_csv": upload},
    )
    assert response.status_code == 422 and "row 2, column `amount`" in response.content.decode()
    assert f"{A},lots" in response.content.decode()
    fixed = post(client, batch, dry_run="on", bonus_rows=f"participant_id,amount\n{A},2.00\n")
    assert fixed.status_code == 200 and f"would pay bonus csv 2.00 to {A}" in fixed.content.decode()
    refused = post(client, batch, bonus_rows=f"participant_id,amount\n{A},x\n")
    assert refused.status_code == 422 and "row 2, column `amount`" in refused.content.decode()
    assert fake.posts() == []
