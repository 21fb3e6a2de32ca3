"""POST /prolific/webhook/: Prolific's signature is checked, each event acts once, and a returned or
timed-out submission gives the worker's slots back at once."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time

import pytest
from django.test import Client
from django.urls import reverse

from annotator.models import Assignment, Enrolment, Item, ProlificWebhookEvent
from annotator.studies.prolific.services.webhook import signature_for
from tests.annotator.study_support import PID_A, PID_B, arrive, prolific_link, start
from tests.factories import make_batch

pytestmark = pytest.mark.django_db

SECRET = "whsec-test-secret"
URL = "/prolific/webhook/"


@pytest.fixture(autouse=True)
def secret(settings):
    settings.PROLIFIC_WEBHOOK_SECRET = SECRET


def reference_signature(timestamp: str, body: bytes) -> str:
    """Prolific's documented recipe, spelled independently of the app's code."""
    return base64.b64encode(
        hmac.new(SECRET.encode(), str.encode(timestamp) + body, hashlib.sha256).digest()
    ).decode()


def deliver(payload, *, timestamp=None, signature=None, client=None):
    timestamp = str(int(time.time())) if timestamp is None else timestamp
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    headers = {
        "HTTP_X_PROLIFIC_REQUEST_TIMESTAMP": timestamp,
        "HTTP_X_PROLIFIC_REQUEST_SIGNATURE": reference_signature(timestamp, body)
        if signature is None
        else signature,
    }
    return (client or Client(enforce_csrf_checks=True)).post(
        URL, body, content_type="application/json", **headers
    )


def returned(pid=PID_A, session=None, status="RETURNED", **extra):
    return {
        "resource_id": session or f"sess-{pid}",
        "event_type": "submission.status.change",
        "participant_id": pid,
        "status": status,
        **extra,
    }


@pytest.fixture
def full_study():
    """One item, k=3: worker A and two others hold every slot."""
    batch = make_batch("hook", n_items=1, k=3)
    _link, token = prolific_link(batch, quota=1)
    for pid in (PID_A, "c" * 24, "d" * 24):
        client, _ = arrive(token, pid)
        start(client, batch)
        assert client.get(reverse("annotate_next", args=[batch.pk])).status_code == 200
    return batch, token


def lease_of(pid):
    return Assignment.objects.get(annotator__enrolments__worker_id=pid)


def test_the_url_is_the_contract():
    assert reverse("prolific_webhook") == URL


def test_signature_matches_prolifics_recipe():
    body = b'{"a": 1}'
    assert signature_for(secret=SECRET, timestamp="123", body=body) == reference_signature("123", body)


def test_a_returned_submission_releases_the_lease_and_the_slot_goes_to_another(full_study):
    batch, token = full_study
    _client, full = arrive(token, PID_B)
    assert "annotator/study_full.html" in [t.name for t in full.templates]  # every slot is held
    response = deliver(returned())
    assert response.status_code == 200 and response.json() == {
        "ok": True,
        "duplicate": False,
        "leases_released": 1,
    }
    assert lease_of(PID_A).state == Assignment.State.RELEASED
    assert lease_of("c" * 24).state == Assignment.State.LEASED  # the others keep theirs
    assert Item.objects.get(batch=batch).n_leased == 2
    assert Enrolment.objects.get(worker_id=PID_A).end == Enrolment.End.RETURNED
    client_b, _ = arrive(token, PID_B)
    start(client_b, batch)
    assert client_b.get(reverse("annotate_next", args=[batch.pk])).status_code == 200
    assert lease_of(PID_B).item == Item.objects.get(batch=batch)


def test_timed_out_ends_the_visit_too(full_study):
    batch, _token = full_study
    assert deliver(returned(status="TIMED-OUT")).json()["leases_released"] == 1
    assert Enrolment.objects.get(worker_id=PID_A).end == Enrolment.End.TIMED_OUT


def test_the_same_event_twice_acts_once(full_study):
    payload = returned(event_id="evt-1")
    assert deliver(payload).json()["duplicate"] is False
    again = deliver(payload, timestamp=str(int(time.time()) + 60))
    assert again.status_code == 200 and again.json() == {"ok": True, "duplicate": True, "leases_released": 0}
    assert ProlificWebhookEvent.objects.count() == 1


def test_the_same_delivery_without_an_event_id_is_recognised(full_study):
    assert deliver(returned()).json()["duplicate"] is False
    assert deliver(returned()).json()["duplicate"] is True


def test_another_session_of_the_same_participant_is_left_alone(full_study):
    response = deliver(returned(session="a-submission-of-another-study"))
    assert response.json()["leases_released"] == 0
    assert Enrolment.objects.get(worker_id=PID_A).end == ""
    assert lease_of(PID_A).state == Assignment.State.LEASED


def test_other_statuses_release_nothing(full_study):
    assert deliver(returned(status="APPROVED")).json()["leases_released"] == 0
    assert lease_of(PID_A).state == Assignment.State.LEASED


@pytest.mark.parametrize("signature", ["", "bm90IGl0", "x" * 500])
def test_a_wrong_or_missing_signature_is_refused_and_changes_nothing(full_study, signature):
    response = deliver(returned(), signature=signature)
    assert response.status_code == 401 and "X-Prolific-Request-Signature" in response.json()["error"]
    assert not ProlificWebhookEvent.objects.exists() and lease_of(PID_A).state == Assignment.State.LEASED


def test_a_signature_for_another_timestamp_is_refused(full_study):
    body = json.dumps(returned()).encode()
    now = int(time.time())
    response = deliver(body, timestamp=str(now), signature=reference_signature(str(now + 1), body))
    assert response.status_code == 401


@pytest.mark.parametrize("age_s", [901, -901, 86_400 * 365])
def test_an_old_or_future_delivery_is_refused_even_when_signed(full_study, age_s):
    """A captured delivery replayed later (or stamped ahead) is refused before anything acts on it."""
    response = deliver(returned(event_id="evt-old"), timestamp=str(int(time.time()) - age_s))
    assert response.status_code == 401 and "X-Prolific-Request-Timestamp" in response.json()["error"]
    assert not ProlificWebhookEvent.objects.exists() and lease_of(PID_A).state == Assignment.State.LEASED


@pytest.mark.parametrize("timestamp", ["", "soon", "1.5e9", "٣"])
def test_a_timestamp_that_is_not_a_unix_time_is_refused(full_study, timestamp):
    response = deliver(returned(), timestamp=timestamp)
    assert response.status_code == 401 and not ProlificWebhookEvent.objects.exists()


def test_a_delivery_within_the_window_is_taken(full_study, settings):
    settings.PROLIFIC_WEBHOOK_MAX_AGE_S = 3600
    response = deliver(returned(), timestamp=str(int(time.time()) - 3000))
    assert response.status_code == 200 and response.json()["leases_released"] == 1


def test_without_a_secret_nothing_is_accepted(full_study, settings):
    settings.PROLIFIC_WEBHOOK_SECRET = ""
    response = deliver(returned())
    assert response.status_code == 401 and "PROLIFIC_WEBHOOK_SECRET" in response.json()["error"]


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[1, 2]",
        b"\xff\xfe",
        b'{"event_type": 5, "status": null}',
        json.dumps(returned(pid="x" * 5000)).encode(),
    ],
)
def test_odd_bodies_never_give_a_500(body):
    response = deliver(body)
    assert response.status_code in (200, 400)


def test_get_is_not_allowed():
    assert Client().get(URL).status_code == 405
