"""Prolific webhooks: check the signature, act once per event, and give returned slots back at once.

Prolific signs ``timestamp + body`` with the webhook secret (HMAC-SHA256, base64) and sends the
result in ``X-Prolific-Request-Signature`` and the timestamp in ``X-Prolific-Request-Timestamp``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Q

from annotator.models import Assignment, Enrolment, ProlificWebhookEvent
from annotator.studies.services.enrolment import enrolment_end

End = Enrolment.End
# A submission that ended without being completed: the worker's leases go back to the pool.
ENDS = {"RETURNED": End.RETURNED, "TIMED-OUT": End.TIMED_OUT}
MAX_ID = 100


def signature_for(*, secret: str, timestamp: str, body: bytes) -> str:
    digest = hmac.new(secret.encode(), timestamp.encode() + body, hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


def signature_valid(*, secret: str, timestamp: str, body: bytes, signature: str) -> bool:
    if not secret or not signature or not timestamp:
        return False
    return hmac.compare_digest(
        signature_for(secret=secret, timestamp=timestamp, body=body).encode(), signature.strip().encode()
    )


def timestamp_fresh(timestamp: str, *, now: float, max_age_s: int) -> bool:
    """Whether the signed UNIX timestamp lies within ``max_age_s`` of ``now`` (either way: clocks drift)."""
    try:
        sent = int(timestamp.strip())
    except ValueError:
        return False
    return abs(now - sent) <= max_age_s


def event_id_of(payload: dict, *, timestamp: str, body: bytes) -> str:
    """The event id Prolific sends, or, when the payload carries none, the digest of the signed
    content (the same delivery sent twice has the same one)."""
    for key in ("event_id", "id"):
        value = payload.get(key)
        if isinstance(value, str) and 0 < len(value) <= MAX_ID:
            return value
    return "sha256:" + hashlib.sha256(timestamp.encode() + b"." + body).hexdigest()


@dataclass(frozen=True)
class Handled:
    duplicate: bool
    released: int


def _text(payload: dict, key: str) -> str:
    value = payload.get(key, "")
    return value[:MAX_ID] if isinstance(value, str) else ""


@transaction.atomic
def webhook_event_handle(*, event_id: str, payload: dict) -> Handled:
    """Record the event once; on a submission that was returned or timed out, end the worker's
    visit in every batch bound to that submission, which gives back their live leases."""
    event_type, status = _text(payload, "event_type"), _text(payload, "status").upper()
    submission_id, participant_id = _text(payload, "resource_id"), _text(payload, "participant_id")
    event, created = ProlificWebhookEvent.objects.get_or_create(
        event_id=event_id, defaults={"event_type": event_type, "resource_id": submission_id, "status": status}
    )
    if not created:
        return Handled(duplicate=True, released=0)
    released = 0
    if event_type == "submission.status.change" and status in ENDS and participant_id:
        # The session id Prolific passes is the submission id: a worker bound to another session is
        # in another study's submission and stays as they are.
        enrolments = (
            Enrolment.objects.filter(platform="prolific", worker_id=participant_id, end="")
            .filter(
                Q(entry_session_id=submission_id)
                | Q(platform_session_id=submission_id)
                | Q(entry_session_id="", platform_session_id="")
            )
            .select_related("batch")
        )
        for enrolment in enrolments:
            released += Assignment.objects.filter(
                annotator_id=enrolment.user_id, batch_id=enrolment.batch_id, state=Assignment.State.LEASED
            ).count()
            enrolment_end(
                enrolment=enrolment, end=ENDS[status], reason=f"Prolific: submission {status.lower()}"
            )
        event.leases_released = released
        event.save(update_fields=["leases_released"])
    return Handled(duplicate=False, released=released)
