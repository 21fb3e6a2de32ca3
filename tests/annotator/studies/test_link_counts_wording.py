"""Counts on the Studies page and in the commands that print the same links read as English:
"1 account", "3 accounts", "1 day", never "account(s)"."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from annotator.management.commands import prolific_review as prolific_command
from tests.annotator.studies.prolific_fake import STUDY, Fake, worker
from tests.factories import make_batch

pytestmark = pytest.mark.django_db


@pytest.fixture
def batch():
    return make_batch("counted", n_items=2)


@pytest.fixture
def admin_client(admin_user):
    client = Client()
    client.force_login(admin_user)
    return client


def _stderr(*args) -> str:
    err = StringIO()
    call_command(*args, stdout=StringIO(), stderr=err)
    return err.getvalue()


@pytest.mark.parametrize(("uses", "wording"), [(1, "up to 1 account,"), (3, "up to 3 accounts,")])
def test_invite_link_command_counts_accounts(batch, uses, wording):
    said = _stderr("invite_link", batch.name, "--uses", str(uses))
    assert wording in said and "(s)" not in said


@pytest.mark.parametrize(
    ("people", "days", "wording"),
    [
        ("ana,\n", 1, "1 account for counted; each link works once, for 1 day."),
        ("ana,\nbo,\n", 7, "2 accounts for counted; each link works once, for 7 days."),
    ],
)
def test_add_annotators_command_counts_accounts_and_days(batch, tmp_path, people, days, wording):
    csv = tmp_path / "people.csv"
    csv.write_text("username,email\n" + people)
    said = _stderr("add_annotators", str(csv), "--batch", batch.name, "--days", str(days))
    assert wording in said and "(s)" not in said


@pytest.mark.parametrize(
    ("uses", "title"), [(1, "Invite link (up to 1 account)"), (3, "Invite link (up to 3 accounts)")]
)
def test_studies_page_names_the_invite_count(batch, admin_client, uses, title):
    page = admin_client.post(reverse("invite_link_new"), {"batches": [batch.pk], "uses": uses, "days": 7})
    assert page.status_code == 200 and page.context["made"]["what"] == title
    assert f"<h2>{title}</h2>" in page.content.decode()


@pytest.mark.parametrize(
    ("people", "title"),
    [
        (b"carla,\n", "1 account for counted: a one-time sign-in link"),
        (b"carla,\ndan,\n", "2 accounts for counted: one-time sign-in links"),
    ],
)
def test_studies_page_names_the_account_count(batch, admin_client, people, title):
    upload = SimpleUploadedFile("people.csv", b"username,email\n" + people, content_type="text/csv")
    page = admin_client.post(reverse("annotators_new"), {"batch": batch.pk, "file": upload, "days": 7})
    assert page.status_code == 200 and page.context["made"]["what"] == title


def test_prolific_review_counts_submissions(batch, monkeypatch):
    fake = Fake()
    monkeypatch.setattr(prolific_command, "client_factory", fake.client)
    worker(batch, "a" * 24, session="subA")
    fake.add("subA", "a" * 24)
    out = StringIO()
    call_command("prolific_review", batch.name, "--study-id", STUDY, "--approve", stdout=out)
    said = out.getvalue()
    assert f"Prolific study {STUDY}: 1 submission;" in said and "Approved 1 submission." in said
    assert "(s)" not in said
