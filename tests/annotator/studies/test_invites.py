"""Invite links and bulk accounts with one-time sign-in links."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO
from urllib.parse import urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotator.models import AccountScope, InviteLink, SignInLink
from annotator.services.tokens import token_hash
from annotator.studies.services.links import invite_create, link_revoke
from tests.factories import make_batch

pytestmark = pytest.mark.django_db
User = get_user_model()
NEW = {
    "username": "new-person",
    "password1": "a-long-unusual-passphrase-42",
    "password2": "a-long-unusual-passphrase-42",
}


def path_of(url: str) -> str:
    return urlsplit(url).path


@pytest.fixture
def batches():
    return (
        make_batch("invited-a", n_items=2),
        make_batch("invited-b", n_items=2),
        make_batch("not-invited", n_items=2),
    )


def test_invite_link_command_makes_an_annotator_limited_to_its_batches(batches):
    a, b, other = batches
    out = StringIO()
    call_command("invite_link", a.name, b.name, "--uses", "2", "--days", "3", stdout=out, stderr=StringIO())
    url = out.getvalue().strip()
    invite = InviteLink.objects.get(token_hash=token_hash(path_of(url).split("/")[2]))
    assert invite.max_uses == 2 and timedelta(days=2.9) < invite.expires_at - timezone.now() <= timedelta(
        days=3
    )
    client = Client()
    page = client.get(path_of(url))
    assert (
        page.status_code == 200
        and a.name in page.content.decode()
        and other.name not in page.content.decode()
    )
    response = client.post(path_of(url), NEW)
    assert response.status_code == 302 and response["Location"] == reverse("annotate_queue")
    user = User.objects.get(username="new-person")
    assert user.check_password(NEW["password1"]) and user.groups.filter(name="annotator").exists()
    assert set(user.scope.batches.all()) == {a, b}
    queue = client.get(reverse("annotate_queue")).content.decode()
    assert a.name in queue and b.name in queue and other.name not in queue
    assert client.get(reverse("annotate_next", args=[other.pk])).status_code == 404
    assert client.get(reverse("annotate_next", args=[a.pk])).status_code in (200, 302)


def test_an_invite_makes_at_most_its_uses(batches):
    invite, token = invite_create(batches=[batches[0]], uses=1)
    assert Client().post(reverse("invite", args=[token]), NEW).status_code == 302
    second = Client().post(reverse("invite", args=[token]), {**NEW, "username": "second"})
    assert second.status_code == 403 and "used as many times" in second.content.decode()
    assert not User.objects.filter(username="second").exists()
    invite.refresh_from_db()
    assert invite.uses == 1


def test_expired_invite_is_403_and_makes_nobody(batches):
    invite, token = invite_create(batches=[batches[0]], uses=3)
    InviteLink.objects.filter(pk=invite.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    for response in (
        Client().get(reverse("invite", args=[token])),
        Client().post(reverse("invite", args=[token]), NEW),
    ):
        assert response.status_code == 403 and "expired" in response.content.decode()
    assert not User.objects.filter(username="new-person").exists()


def test_revoked_and_forged_invites(batches):
    invite, token = invite_create(batches=[batches[0]], uses=3)
    assert Client().get(reverse("invite", args=[token + "x"])).status_code == 404
    link_revoke(link=invite)
    assert Client().get(reverse("invite", args=[token])).status_code == 403


def test_invite_form_errors_keep_the_link(batches):
    invite, token = invite_create(batches=[batches[0]], uses=1)
    User.objects.create_user("taken")
    for data in (
        {**NEW, "username": "taken"},
        {**NEW, "password2": "different"},
        {**NEW, "password1": "123", "password2": "123"},
    ):
        assert Client().post(reverse("invite", args=[token]), data).status_code == 422
    invite.refresh_from_db()
    assert invite.uses == 0


def test_add_annotators_prints_one_time_signin_links(batches, tmp_path):
    a, _b, other = batches
    people = tmp_path / "people.csv"
    people.write_text("username,email\nana,ana@example.org\nbo,\n")
    out = StringIO()
    call_command("add_annotators", str(people), "--batch", a.name, stdout=out, stderr=StringIO())
    lines = out.getvalue().strip().splitlines()
    assert lines[0] == "username,email,signin_link" and len(lines) == 3
    ana_url = lines[1].split(",")[2]
    ana = User.objects.get(username="ana")
    assert ana.email == "ana@example.org" and not ana.has_usable_password()
    assert list(ana.scope.batches.all()) == [a] and ana.scope.origin == AccountScope.Origin.BULK
    client = Client()
    assert client.get(path_of(ana_url)).status_code == 200
    response = client.post(
        path_of(ana_url), {"new_password1": "ana-secret-phrase-9", "new_password2": "ana-secret-phrase-9"}
    )
    assert response.status_code == 302
    ana.refresh_from_db()
    assert ana.check_password("ana-secret-phrase-9")
    assert client.get(reverse("annotate_next", args=[other.pk])).status_code == 404
    # Once only.
    again = Client().get(path_of(ana_url))
    assert again.status_code == 403 and "already used" in again.content.decode()
    assert SignInLink.objects.get(user=ana).used_at is not None


def test_add_annotators_refuses_a_bad_list_and_creates_nobody(batches, tmp_path):
    a = batches[0]
    User.objects.create_user("taken")
    bad = tmp_path / "bad.csv"
    bad.write_text("username,email\nok-one,ok@example.org\nbad name!,x\nok-one,dup@example.org\n")
    with pytest.raises(CommandError) as info:
        call_command("add_annotators", str(bad), "--batch", a.name, stdout=StringIO())
    message = str(info.value)
    assert (
        "row 3, column `username`" in message
        and "row 3, column `email`" in message
        and "repeats row 2" in message
    )
    taken = tmp_path / "taken.csv"
    taken.write_text("username,email\nfresh,\ntaken,\n")
    with pytest.raises(CommandError, match="already in use: taken"):
        call_command("add_annotators", str(taken), "--batch", a.name, stdout=StringIO())
    no_header = tmp_path / "no_header.csv"
    no_header.write_text("name\nx\n")
    with pytest.raises(CommandError, match="missing column"):
        call_command("add_annotators", str(no_header), "--batch", a.name, stdout=StringIO())
    assert not User.objects.filter(username__in=["ok-one", "fresh"]).exists()


def test_expired_signin_link_is_403(batches):
    client = Client()
    admin = User.objects.create_user("boss", is_staff=True)
    client.force_login(admin)
    upload = SimpleUploadedFile(
        "people.csv", b"username,email\ncarla,carla@example.org\n", content_type="text/csv"
    )
    page = client.post(reverse("annotators_new"), {"batch": batches[0].pk, "file": upload, "days": 7})
    assert page.status_code == 200
    [(username, _email, url)] = page.context["made"]["accounts"]
    assert username == "carla" and url.startswith("http://testserver/signin/")
    SignInLink.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert Client().get(path_of(url)).status_code == 403


def test_admin_page_makes_and_revokes_links(batches, admin_user):
    a = batches[0]
    client = Client()
    client.force_login(admin_user)
    page = client.post(
        reverse("study_link_new"),
        {
            "batch": a.pk,
            "platform": "prolific",
            "quota": 10,
            "completion_code": "CC1",
            "days": 30,
        },
    )
    assert page.status_code == 200
    [url] = page.context["made"]["urls"]
    assert "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}" in url
    bad = client.post(
        reverse("study_link_new"),
        {"batch": a.pk, "platform": "prolific", "quota": 0, "completion_code": "", "days": 30},
    )
    assert bad.status_code == 422
    page = client.post(reverse("invite_link_new"), {"batches": [a.pk], "uses": 3, "days": 7})
    [invite_url] = page.context["made"]["urls"]
    invite = InviteLink.objects.get()
    assert client.post(reverse("link_revoke", args=["invite", invite.pk])).status_code == 302
    assert Client().get(path_of(invite_url)).status_code == 403
    listing = client.get(reverse("studies")).content.decode()
    assert "revoked" in listing and "CC1" in listing
    settings_page = client.post(
        reverse("study_settings", args=[a.pk]), {"consent_text": "Agree?", "max_items_per_annotator": 5}
    )
    assert settings_page.status_code == 302
    a.refresh_from_db()
    assert (a.consent_text, a.max_items_per_annotator) == ("Agree?", 5)


def test_django_admin_lists_enrolments_and_links_without_tokens(batches):
    from tests.annotator.study_support import PID_A, arrive, prolific_link

    link, token = prolific_link(batches[0])
    arrive(token, PID_A)
    boss = User.objects.create_superuser("root", password="x-long-password-1")
    client = Client()
    client.force_login(boss)
    enrolments = client.get("/django-admin/annotator/enrolment/")
    assert enrolments.status_code == 200 and PID_A in enrolments.content.decode()
    page = client.get(f"/django-admin/annotator/studylink/{link.pk}/change/")
    assert page.status_code == 200 and token not in page.content.decode()
    assert client.get("/django-admin/annotator/studylink/add/").status_code == 403
    for model in ("accountscope", "signinlink", "invitelink"):
        assert client.get(f"/django-admin/annotator/{model}/").status_code == 200


def test_someone_signed_in_is_not_offered_a_second_account(batches):
    invite, token = invite_create(batches=[batches[0]], uses=2)
    client = Client()
    assert client.post(reverse("invite", args=[token]), NEW).status_code == 302  # signed in as new-person now
    page = client.get(reverse("invite", args=[token])).content.decode()
    assert "You are signed in as <strong>new-person</strong>" in page and 'name="password1"' not in page
    again = client.post(reverse("invite", args=[token]), {**NEW, "username": "second"})
    assert again.status_code == 409 and not User.objects.filter(username="second").exists()
    invite.refresh_from_db()
    assert invite.uses == 1
