"""Helpers for the study tests: a crowd study link, a worker's visit, a full rating."""

from __future__ import annotations

from urllib.parse import urlencode

from django.test import Client
from django.urls import reverse

from annotator.models import Item
from annotator.studies.services.links import study_link_create

PID_A = "5f0c1a2b3c4d5e6f7a8b9c0d"
PID_B = "60aa1b2c3d4e5f6a7b8c9d0e"
RATING = {
    "score_coherence": "4",
    "score_relevance": "4",
    "score_instruction_following": "4",
    "score_safety_compliance": "5",
    "score_fluency": "5",
    "constraint_0": "met",
    "constraint_1": "met",
}


def prolific_link(batch, **options):
    defaults = {
        "platform": "prolific",
        "quota": 2,
        "completion_code": "C0MPLETE",
        "screen_out_code": "SCREENED",
        "no_consent_code": "NOCONSENT",
    }
    return study_link_create(batch=batch, **{**defaults, **options})


def entry_url(token: str, pid: str | None = PID_A, study: str = "study1", session: str | None = None) -> str:
    """The link as Prolific fills it in; each worker has their own session id unless one is given."""
    session = session if session is not None else f"sess-{pid or 'none'}"
    query = {"STUDY_ID": study, "SESSION_ID": session}
    if pid is not None:
        query["PROLIFIC_PID"] = pid
    return reverse("study_entry", args=[token]) + "?" + urlencode(query)


def arrive(token: str, pid: str = PID_A, client: Client | None = None, **ids) -> tuple[Client, object]:
    client = client or Client()
    response = client.get(entry_url(token, pid, **ids))
    return client, response


def start(client: Client, batch) -> None:
    """Accept the consent (if any) and the instructions."""
    if batch.consent_text:
        client.post(reverse("study_consent", args=[batch.pk]), {"decision": "accept"})
    client.post(reverse("study_instructions", args=[batch.pk]))


def rate_next(client: Client, batch):
    """GET the next item and submit a rating of it; returns the submit response."""
    response = client.get(reverse("annotate_next", args=[batch.pk]))
    assert response.status_code == 200, response
    item = response.context["item"]
    assert isinstance(item, Item)
    return client.post(reverse("annotate_submit", args=[item.pk]), RATING)
