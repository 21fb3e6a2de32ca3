"""Change alerts: computed by ``hcs.streams.alerts.stream_alerts`` on the stored windows, recorded once
per change (stream, judge, dimension, kind and the window it started in), and sent to
``STREAM_ALERT_WEBHOOK_URL``.

The body is JSON; ``X-HCS-Signature: sha256=<hex>`` is its HMAC-SHA256 under
``STREAM_ALERT_WEBHOOK_SECRET``. Each alert has one event id (``X-HCS-Event-Id`` and ``event_id`` in the
body): delivery is at least once, so a receiver acts on an event id once. The background worker
delivers (job kind ``stream_alert``), trying again with a doubling backoff; every attempt is logged in
``StreamWebhookDelivery``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import logging
import time

import httpx
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotator.models import Job, Stream, StreamAlert, StreamWebhookDelivery
from annotator.streams.selectors import alerts_data
from hcs.numbers import finite_or_none
from hcs.streams.alerts import Alert
from hcs.streams.alerts import stream_alerts as detect_alerts

log = logging.getLogger(__name__)
SIGNATURE_HEADER = "X-HCS-Signature"
EVENT_HEADER = "X-HCS-Event-Id"
TIMEOUT_S = 10.0


def alert_payload(alert: StreamAlert) -> dict:
    return {
        "event_id": str(alert.event_id),
        "type": "stream.alert",
        "stream": alert.stream.name,
        "judge": alert.judge or None,
        "dimension": alert.dimension,
        "window": {"start": alert.window_start.isoformat(), "end": alert.window_end.isoformat()},
        "kind": alert.kind,
        "detail": alert.detail,
        "created_at": alert.created_at.isoformat(),
    }


def alert_body(alert: StreamAlert) -> bytes:
    """The same bytes on every attempt (sorted keys), so one event always carries one signature."""
    return json.dumps(alert_payload(alert), sort_keys=True, separators=(",", ":")).encode("utf-8")


def signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def alerts_refresh(*, stream: Stream, bounds: list[tuple[dt.datetime, dt.datetime]]) -> list[StreamAlert]:
    """Run the change detectors on every dimension of the stream over its windows ``bounds`` (in time
    order) and record the alerts not stored yet. Returns the new ones."""
    rubric = stream.batch.rubric_obj
    made = []
    data = alerts_data(stream, rubric.dimension_keys, bounds)
    for dimension in rubric.dimension_keys:
        found = detect_alerts(
            data[dimension].human,
            data[dimension].judges,
            dimension=dimension,
            scale=(rubric.scale_min, rubric.scale_max),
        )
        made += alerts_record(
            stream=stream, judge="", dimension=dimension, alerts=[_found(a, bounds) for a in found]
        )
    return made


def _found(alert: Alert, bounds) -> dict:
    """One detection as ``alerts_record`` takes it: the window the change started in, and the evidence."""
    d = alert.detection
    first, last = d.reference
    return {
        "start": bounds[d.since][0],
        "end": bounds[d.since][1],
        "kind": alert.kind,
        "judge": alert.judge or "",
        "detail": {
            "detected_at": bounds[d.detected_at][0].isoformat(),
            "since": bounds[d.since][0].isoformat(),
            "evidence": {
                "direction": d.direction,
                "statistic": d.statistic,
                "threshold": d.threshold,
                "e_value": d.e_value,
                "reference": {"start": bounds[first][0].isoformat(), "end": bounds[last][1].isoformat()},
                "bound": d.bound,
                "before": d.before,
                "after": finite_or_none(d.after),
            },
        },
    }


def alerts_record(*, stream: Stream, judge: str, dimension: str, alerts: list[dict]) -> list[StreamAlert]:
    """Store the alerts not stored yet and queue their webhook deliveries. An alert is one change: the
    stream, judge (``found["judge"]`` when given; "" for the stream-wide kinds), dimension, kind and the
    window the change started in; its end is not part of it (a count window's end can move).

    The database holds the once (``stream_alert_once``): two refreshes of the stream running at the same
    time both find a change new, and only the one whose insert commits first records it and queues its
    webhook; the other's insert fails on the constraint, and it moves on."""
    made = []
    for found in alerts:
        key = {
            "stream": stream,
            "judge": found.get("judge", judge),
            "dimension": dimension,
            "window_start": found["start"],
            "kind": str(found.get("kind", "drift")),
        }
        if StreamAlert.objects.filter(**key).exists():
            continue
        try:
            # The alert and its delivery job commit together, or neither (the job's queueing runs on commit).
            with transaction.atomic():
                alert = StreamAlert.objects.create(
                    **key, detail=found.get("detail", {}), window_end=found["end"]
                )
                alert_notify(alert)
        except IntegrityError:
            if StreamAlert.objects.filter(**key).exists():
                continue  # stored by the concurrent refresh, which queued its webhook
            raise
        made.append(alert)
    return made


def alert_notify(alert: StreamAlert) -> Job | None:
    """Queue the alert's delivery; None when no webhook URL is set."""
    if not settings.STREAM_ALERT_WEBHOOK_URL:
        return None
    from annotator.services.jobs import job_enqueue  # the web side of the job queue

    job = Job.objects.create(
        kind=Job.STREAM_ALERT,
        created_by_id=alert.stream.created_by_id,
        params={"alert_id": alert.pk},
        label=f"Alert webhook: \u201c{alert.stream.name}\u201d {alert.judge}/{alert.dimension} ({alert.kind})",
    )
    job_enqueue(job)
    return job


def _attempt(alert: StreamAlert, number: int, url: str, body: bytes, secret: str) -> bool:
    headers = {
        "Content-Type": "application/json",
        EVENT_HEADER: str(alert.event_id),
        SIGNATURE_HEADER: signature(secret, body),
    }
    status, error = None, ""
    try:
        response = httpx.post(url, content=body, headers=headers, timeout=TIMEOUT_S)
        status = response.status_code
        if not 200 <= status < 300:
            error = f"HTTP {status}"
    except httpx.HTTPError as exc:
        error = f"{type(exc).__name__}: {exc}"[:1000]
    ok = status is not None and 200 <= status < 300
    StreamWebhookDelivery.objects.create(
        alert=alert,
        attempt=number,
        url=url[:500],
        attempted_at=timezone.now(),
        status_code=status,
        ok=ok,
        error=error,
    )
    return ok


def alert_job_run(job: Job, update) -> None:
    """Deliver one alert (``JOB_KINDS["stream_alert"]``): up to ``STREAM_ALERT_WEBHOOK_ATTEMPTS`` attempts,
    waiting ``STREAM_ALERT_WEBHOOK_BACKOFF_SECONDS`` × 2^(n−1) before attempt n + 1."""
    alert = StreamAlert.objects.select_related("stream").get(pk=job.params["alert_id"])
    url, secret = settings.STREAM_ALERT_WEBHOOK_URL, settings.STREAM_ALERT_WEBHOOK_SECRET
    if alert.deliveries.filter(ok=True).exists():  # a job tried again after a delivery that succeeded
        update(job, state=Job.DONE, finished_at=timezone.now(), step="", message="Already delivered.")
        return
    if not url:
        update(job, state=Job.FAILED, finished_at=timezone.now(), step="", message="No webhook URL is set.")
        return
    body = alert_body(alert)
    done = alert.deliveries.count()
    attempts = settings.STREAM_ALERT_WEBHOOK_ATTEMPTS
    for n in range(attempts):
        if n:
            time.sleep(settings.STREAM_ALERT_WEBHOOK_BACKOFF_SECONDS * 2 ** (n - 1))
        update(job, step=f"Attempt {n + 1} of {attempts}")
        if _attempt(alert, done + n + 1, url, body, secret):
            update(
                job,
                state=Job.DONE,
                finished_at=timezone.now(),
                step="",
                message=f"Delivered on attempt {n + 1}.",
            )
            return
    update(
        job,
        state=Job.FAILED,
        finished_at=timezone.now(),
        step="",
        message=f"Not delivered after {attempts} attempts (see the delivery log). You can try again.",
    )
