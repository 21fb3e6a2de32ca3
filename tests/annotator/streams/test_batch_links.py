"""The stream's batch says whose it is: its report and its judge cards link to the stream's page, and the
report says why PPI++ is withheld in the stream's own terms (labels sent through the streams API)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from annotator.judges.selectors.sample import NOT_RANDOM
from annotator.models import Judge
from annotator.reports.selectors.batch_report import batch_report
from tests.annotator.streams.conftest import trace
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def _labelled(api_as, stream, share: float):
    client = api_as("researcher")
    body = client.post(
        "/streams/prod-chat/traces", {"traces": [trace(n, score=1 + n % 5) for n in range(80)]}
    ).json()
    sampled = body["sampled"]
    chosen = sampled[: max(3, int(len(sampled) * share))]
    labels = [
        {"trace_id": t, "annotator": f"ann-{r}", "scores": {"coherence": 1 + (i + r) % 5}}
        for i, t in enumerate(chosen)
        for r in range(3)
    ]
    assert client.post("/streams/prod-chat/annotations", labels).status_code == 201
    return sampled, chosen


def _page(url: str) -> str:
    from django.contrib.auth import get_user_model

    client = Client()
    reader = get_user_model().objects.filter(username="reader").first() or make_user(
        "reader", role="researcher"
    )
    client.force_login(reader)
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def test_the_report_and_the_judge_card_link_to_the_stream(api_as, stream):
    _labelled(api_as, stream, 0.5)
    link = reverse("stream_page", args=["prod-chat"])
    report = _page(reverse("report_batch", args=[stream.batch_id]))
    assert f'the stream <a href="{link}">' in report
    judge = Judge.objects.get(name="j1")
    card = _page(reverse("judge_card", args=[stream.batch_id, judge.pk]))
    assert f'href="{link}"' in card and "pools every window" in card


def test_a_plain_batch_links_to_no_stream(api_as, stream):
    from tests.factories import make_batch

    batch = make_batch("plain", n_items=3)
    assert "the stream <a" not in _page(reverse("report_batch", args=[batch.pk]))


@pytest.mark.parametrize("share, census", [(0.5, False), (1.0, True)])
def test_ppi_withheld_in_the_streams_terms(api_as, stream, share, census):
    sampled, chosen = _labelled(api_as, stream, share)
    assert (len(chosen) == len(sampled)) == census
    judges = batch_report(batch=stream.batch, n_resamples=20).sections["judges"].to_json()
    ppi = judges["j1"]["coherence"]["ppi"]
    assert ppi["sample"] == NOT_RANDOM and ppi["estimate"] is None
    assert "streams API" not in ppi["sample_why"] if census else "streams API" in ppi["sample_why"]
    assert "--labelled-at-random" not in ppi["sample_why"] + ppi.get("sample_fix", "")
    assert "/streams/prod-chat/" in ppi["sample_fix"]
    page = _page(reverse("judge_card", args=[stream.batch_id, Judge.objects.get(name="j1").pk]))
    heading = "No PPI++ needed: every item is labelled." in page
    assert heading == census and ("not a random sample" in page) != census
