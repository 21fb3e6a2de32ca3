"""The alert webhook: signed body, one event id on every attempt, retries with a doubling backoff by the
background worker's job, each attempt logged; against a real HTTP receiver on a local port."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import os
import socket

import pytest

from annotator.models import Job, StreamAlert, StreamWebhookDelivery
from annotator.streams.services import alerts as alerts_service
from annotator.streams.services.alerts import alert_notify, alerts_record
from annotator.streams.services.streams import stream_create
from tests.factories import make_user
from tests.webhook_receiver import Receiver

pytestmark = pytest.mark.django_db


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# The receiver's port, and one where nobody listens: the system's free ones, so runs side by side never
# meet (a fixed port made one run's receiver answer another's webhook).
PORT = int(os.environ.get("HCS_TEST_WEBHOOK_PORT", "0")) or _free_port()
NOBODY = _free_port()
SECRET = "s3cret-for-tests"


@pytest.fixture
def alert(db):
    stream = stream_create(
        name="hooked",
        human_rate=0.2,
        k=3,
        window="day",
        judges=["j1"],
        created_by=make_user("r", role="researcher"),
    )
    start = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
    return StreamAlert.objects.create(
        stream=stream,
        judge="j1",
        dimension="coherence",
        window_start=start,
        window_end=start + dt.timedelta(days=1),
        kind="agreement_drop",
        detail={"qwk": 0.21, "baseline": 0.64},
    )


@pytest.fixture
def webhook(settings, monkeypatch):
    settings.STREAM_ALERT_WEBHOOK_URL = f"http://127.0.0.1:{PORT}/hook"
    settings.STREAM_ALERT_WEBHOOK_SECRET = SECRET
    settings.STREAM_ALERT_WEBHOOK_ATTEMPTS = 4
    settings.STREAM_ALERT_WEBHOOK_BACKOFF_SECONDS = 3
    waits = []
    monkeypatch.setattr(alerts_service.time, "sleep", waits.append)
    return waits


def _valid(headers, body) -> bool:
    expected = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(headers["X-HCS-Signature"], expected)


def test_a_failing_receiver_gets_the_same_signed_event_until_it_accepts(
    alert, webhook, django_capture_on_commit_callbacks
):
    with Receiver([500, 503, 200], port=PORT) as receiver, django_capture_on_commit_callbacks(execute=True):
        job = alert_notify(alert)
    job.refresh_from_db()
    assert job.kind == Job.STREAM_ALERT and job.state == Job.DONE, job.message
    assert len(receiver.requests) == 3
    assert webhook == [3, 6]  # the backoff doubles
    bodies = {body for _, body in receiver.requests}
    assert len(bodies) == 1  # the same bytes, so the same signature, every time
    for headers, body in receiver.requests:
        assert _valid(headers, body)
        assert headers["X-HCS-Event-Id"] == str(alert.event_id)
    payload = json.loads(bodies.pop())
    assert payload["event_id"] == str(alert.event_id) and payload["stream"] == "hooked"
    assert payload["kind"] == "agreement_drop" and payload["window"]["start"].startswith("2026-03-01")
    log = list(StreamWebhookDelivery.objects.filter(alert=alert).values_list("attempt", "status_code", "ok"))
    assert log == [(1, 500, False), (2, 503, False), (3, 200, True)]


def test_a_signature_under_another_secret_does_not_verify(alert, webhook, django_capture_on_commit_callbacks):
    with Receiver([200], port=PORT) as receiver, django_capture_on_commit_callbacks(execute=True):
        alert_notify(alert)
    headers, body = receiver.requests[0]
    assert _valid(headers, body)
    tampered = body.replace(b"agreement_drop", b"agreement_rise")
    assert not _valid(headers, tampered)


def test_after_the_last_attempt_the_job_fails_with_every_attempt_logged(
    alert, webhook, django_capture_on_commit_callbacks
):
    with Receiver([500], port=PORT) as receiver, django_capture_on_commit_callbacks(execute=True):
        job = alert_notify(alert)
    job.refresh_from_db()
    assert job.state == Job.FAILED and "after 4 attempts" in job.message
    assert len(receiver.requests) == 4 and webhook == [3, 6, 12]
    assert list(alert.deliveries.values_list("attempt", "ok")) == [(n, False) for n in (1, 2, 3, 4)]


def test_an_unreachable_receiver_is_logged_as_an_error(
    alert, webhook, settings, django_capture_on_commit_callbacks
):
    settings.STREAM_ALERT_WEBHOOK_URL = f"http://127.0.0.1:{NOBODY}/nobody-listens"
    settings.STREAM_ALERT_WEBHOOK_ATTEMPTS = 2
    with django_capture_on_commit_callbacks(execute=True):
        job = alert_notify(alert)
    job.refresh_from_db()
    assert job.state == Job.FAILED
    assert [d.status_code for d in alert.deliveries.all()] == [None, None]
    assert all("ConnectError" in d.error for d in alert.deliveries.all())


def test_no_url_sends_nothing(alert, settings):
    settings.STREAM_ALERT_WEBHOOK_URL = ""
    assert alert_notify(alert) is None
    assert not Job.objects.exists()


def test_an_alert_is_recorded_and_sent_once(alert, webhook, django_capture_on_commit_callbacks):
    found = {"start": alert.window_start, "end": alert.window_end, "kind": "agreement_drop"}
    with Receiver([200], port=PORT) as receiver, django_capture_on_commit_callbacks(execute=True):
        assert alerts_record(stream=alert.stream, judge="j1", dimension="coherence", alerts=[found]) == []
        other = {**found, "kind": "mean_shift"}
        [made] = alerts_record(stream=alert.stream, judge="j1", dimension="coherence", alerts=[other, other])
    assert made.kind == "mean_shift" and len(receiver.requests) == 1
    assert json.loads(receiver.requests[0][1])["event_id"] == str(made.event_id)
