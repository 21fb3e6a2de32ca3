"""Sessions that load their user and roles in one query, and stay as revocable as Django's own."""

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotator.models import UserSession
from tests.factories import PASSWORD, make_batch, make_user

pytestmark = pytest.mark.django_db


def logged_in(username: str, role: str = "annotator") -> tuple[Client, object]:
    user = make_user(username, role=role)
    client = Client()
    assert client.post(reverse("login"), {"username": username, "password": PASSWORD}).status_code == 302
    return client, user


def test_login_stores_the_user_on_the_session_row():
    client, user = logged_in("ann")
    session = UserSession.objects.get(session_key=client.cookies["sessionid"].value)
    assert session.user_id == user.pk


def test_session_user_and_roles_cost_one_query():
    client, _ = logged_in("ann")
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(reverse("annotate_queue"))  # needs the annotator role
    assert response.status_code == 200
    tables = (
        f'"{UserSession._meta.db_table}"',
        UserSession._meta.db_table + " ",
        '"auth_user"',
        "auth_user ",
    )
    session_reads = [q["sql"] for q in ctx.captured_queries if any(f"FROM {t}" in q["sql"] for t in tables)]
    assert len(session_reads) == 1, session_reads
    assert "auth_group" in session_reads[0]  # the roles come with it


def test_a_role_taken_away_applies_on_the_next_request():
    client, user = logged_in("ann")
    assert client.get(reverse("annotate_queue")).status_code == 200
    user.groups.remove(Group.objects.get(name="annotator"))
    assert client.get(reverse("annotate_queue")).status_code == 403


def test_password_change_ends_other_sessions():
    client, user = logged_in("ann")
    user.set_password("another-long-passphrase-42")
    user.save()
    response = client.get(reverse("annotate_queue"))
    assert response.status_code == 302 and reverse("login") in response["Location"]


def test_logout_revokes_a_copied_cookie():
    client, _ = logged_in("ann")
    thief = Client()
    thief.cookies["sessionid"] = client.cookies["sessionid"].value
    assert thief.get(reverse("annotate_queue")).status_code == 200
    client.post(reverse("logout"))
    response = thief.get(reverse("annotate_queue"))
    assert response.status_code == 302 and reverse("login") in response["Location"]


def test_deactivated_user_is_anonymous_at_once():
    client, user = logged_in("ann")
    user.is_active = False
    user.save()
    response = client.get(reverse("annotate_queue"))
    assert response.status_code == 302


def test_deleting_a_user_deletes_their_sessions():
    client, user = logged_in("ann")
    assert UserSession.objects.filter(user=user).count() == 1
    user.delete()
    assert not UserSession.objects.filter(session_key=client.cookies["sessionid"].value).exists()


def test_a_made_up_session_key_is_anonymous():
    make_batch()
    client = Client()
    client.cookies["sessionid"] = "x" * 32
    response = client.get(reverse("annotate_queue"))
    assert response.status_code == 302 and reverse("login") in response["Location"]
