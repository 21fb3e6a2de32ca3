"""API tokens: hashed at rest, shown once, revocable, expiring, exactly the user's role, rate-limited;
CSRF for session requests only."""

from __future__ import annotations

import hashlib
import io
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotator.models import ApiToken, Batch
from annotator.services.api_tokens import api_token_create, api_token_revoke
from tests.annotator.api.conftest import ApiClient, assert_problem, token_for
from tests.factories import make_batch, make_user

pytestmark = pytest.mark.django_db
ITEM = {"item_id": "a", "prompt": "p", "response": "r"}


def test_the_key_is_stored_only_as_its_hash(researcher_user):
    token, key = api_token_create(user=researcher_user, name="script", days=10)
    row = ApiToken.objects.get(pk=token.pk)
    assert key.startswith("hcs_") and len(key) > 40
    assert row.key_hash == hashlib.sha256(key.encode()).hexdigest()
    assert key not in {getattr(row, f.attname) for f in ApiToken._meta.concrete_fields}
    assert row.prefix == key[:12] and row.expires_at - timezone.now() > timedelta(days=9, hours=23)
    assert ApiClient(key).get("/me").json()["username"] == "res1"


def test_a_wrong_missing_or_malformed_token_is_401_with_a_challenge(researcher_user):
    token_for(researcher_user)
    for client in (ApiClient(), ApiClient("hcs_not-a-real-key"), ApiClient("x" * 500)):
        response = client.get("/me")
        assert_problem(response, 401)
        assert response["WWW-Authenticate"].startswith("Bearer")
    basic = Client(headers={"Authorization": "Basic dXNlcjpwYXNz"})
    assert_problem(basic.get("/api/v1/me"), 401)


def test_revoked_and_expired_tokens_stop_working(researcher_user):
    token, key = api_token_create(user=researcher_user, name="a", days=1)
    client = ApiClient(key)
    assert client.get("/me").status_code == 200
    api_token_revoke(token=token)
    assert_problem(client.get("/me"), 401)
    token2, key2 = api_token_create(user=researcher_user, name="b", days=1)
    ApiToken.objects.filter(pk=token2.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert_problem(ApiClient(key2).get("/me"), 401)
    researcher_user.is_active = False
    researcher_user.save()
    _, key3 = api_token_create(user=researcher_user, name="c", days=1)
    assert_problem(ApiClient(key3).get("/me"), 401)  # a deactivated user's tokens stop too


@pytest.mark.parametrize(
    "role, admin, researcher, annotator",
    [
        ("annotator", False, False, True),
        ("researcher", False, True, False),
        ("admin", True, True, True),
        ("none", False, False, False),
    ],
)
def test_a_token_has_exactly_its_users_role(api_as, role, admin, researcher, annotator):
    client = api_as(role)
    me = client.get("/me").json()
    assert (me["admin"], me["researcher"], me["annotator"]) == (admin, researcher, annotator)
    assert client.get("/batches").status_code == (200 if researcher else 403)
    created = client.post("/batches", {"name": f"by-{role}", "items": [ITEM]})
    assert created.status_code == (201 if admin else 403)
    assert Batch.objects.filter(name=f"by-{role}").exists() == admin


def test_a_role_taken_away_is_gone_from_the_token_at_once(researcher_user):
    client = ApiClient(token_for(researcher_user))
    assert client.get("/batches").status_code == 200
    researcher_user.groups.clear()
    assert_problem(client.get("/batches"), 403)


def test_rate_limit_is_per_token_with_retry_after(researcher_user, settings):
    cache.clear()
    settings.ANNOTATOR_API_RATE = "3/min"
    first, second = ApiClient(token_for(researcher_user)), ApiClient(token_for(researcher_user))
    assert [first.get("/me").status_code for _ in range(3)] == [200, 200, 200]
    limited = first.get("/me")
    body = assert_problem(limited, 429)
    assert body["type"].endswith("rate-limited")
    assert int(limited["Retry-After"]) in range(1, 61)
    assert second.get("/me").status_code == 200  # another token has its own allowance
    cache.clear()


def test_token_requests_need_no_csrf_but_session_requests_do(admin_user):
    key = token_for(admin_user)
    strict = Client(enforce_csrf_checks=True, headers={"Authorization": f"Bearer {key}"})
    response = strict.post(
        "/api/v1/batches", data={"name": "by token", "items": [ITEM]}, content_type="application/json"
    )
    assert response.status_code == 201, response.content
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(admin_user)
    assert browser.get("/api/v1/me").status_code == 200  # reading needs no token
    refused = browser.post(
        "/api/v1/batches", data={"name": "by session", "items": [ITEM]}, content_type="application/json"
    )
    assert "CSRF" in assert_problem(refused, 403)["detail"]
    assert not Batch.objects.filter(name="by session").exists()
    browser.get(reverse("api_tokens"))  # any page sets the CSRF cookie
    csrf = browser.cookies["csrftoken"].value
    allowed = browser.post(
        "/api/v1/batches",
        data={"name": "by session", "items": [ITEM]},
        content_type="application/json",
        headers={"X-CSRFToken": csrf},
    )
    assert allowed.status_code == 201, allowed.content


def test_tokens_page_shows_a_new_key_once_and_revokes(researcher_user):
    client = Client()
    client.force_login(researcher_user)
    assert client.get(reverse("api_tokens")).status_code == 200
    response = client.post(reverse("api_token_new"), {"name": "notebook", "days": "7"})
    assert response.status_code == 201
    key = response.context["new_key"]
    assert key in response.content.decode()
    token = ApiToken.objects.get(user=researcher_user)
    listing = client.get(reverse("api_tokens")).content.decode()
    assert key not in listing and token.prefix in listing and "notebook" in listing
    assert ApiClient(key).get("/me").status_code == 200
    assert client.post(reverse("api_token_revoke", args=[token.pk])).status_code == 302
    assert_problem(ApiClient(key).get("/me"), 401)


@pytest.mark.parametrize("days", ["0", "366", "x"])
def test_tokens_page_refuses_a_bad_lifetime(researcher_user, days):
    client = Client()
    client.force_login(researcher_user)
    assert client.post(reverse("api_token_new"), {"name": "n", "days": days}).status_code == 400
    assert not ApiToken.objects.exists()


def test_nobody_revokes_anothers_token(researcher_user):
    token, key = api_token_create(user=researcher_user, name="mine", days=5)
    other = Client()
    other.force_login(make_user("someone", role="admin"))
    assert other.post(reverse("api_token_revoke", args=[token.pk])).status_code == 404
    assert ApiClient(key).get("/me").status_code == 200


def test_the_command_prints_a_working_key(researcher_user):
    out, err = io.StringIO(), io.StringIO()
    call_command("api_token", "res1", "--days", "3", "--name", "cluster", stdout=out, stderr=err)
    key = out.getvalue().strip()
    assert ApiClient(key).get("/me").json()["token"]["name"] == "cluster"
    token = ApiToken.objects.get()
    assert timedelta(days=2, hours=23) < token.expires_at - timezone.now() <= timedelta(days=3)
    assert key not in err.getvalue() and token.prefix in err.getvalue()


@pytest.mark.parametrize("args, message", [(["ghost"], "No user"), (["res1", "--days", "0"], "1 to 365")])
def test_the_command_refuses(researcher_user, args, message):
    with pytest.raises(CommandError, match=message):
        call_command("api_token", *args, stdout=io.StringIO(), stderr=io.StringIO())
    assert not ApiToken.objects.exists()


def test_unknown_api_paths_and_methods_are_problems(researcher_user):
    client = ApiClient(token_for(researcher_user))
    assert_problem(client.get("/nothing-here"), 404)
    batch = make_batch("m", n_items=1)
    response = client.client.delete(f"/api/v1/batches/{batch.pk}")
    assert_problem(response, 405)
    assert "GET" in response["Allow"]


def test_the_throttle_keeps_each_threads_request_apart():
    import threading

    from annotator.api.auth import TokenRateThrottle

    throttle = TokenRateThrottle()
    throttle.retry_after = 17
    seen = []
    worker = threading.Thread(target=lambda: seen.append(getattr(throttle._state, "retry_after", None)))
    worker.start()
    worker.join()
    assert seen == [None] and throttle.wait() == 17.0
