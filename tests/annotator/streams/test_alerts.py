"""Change alerts end to end: 40 simulated days of traces and labels go through the API, the worker's
refresh runs the detectors, and a planted change raises its alert once, with its webhook queued."""

from __future__ import annotations

import base64
import datetime as dt

import numpy as np
import pytest
from django.urls import reverse

from annotator.models import Job, StreamAlert
from annotator.streams import series as stream_series
from annotator.streams.services.series import series_refresh_all
from hcs.streams.simulate import StreamModel, simulate_window
from tests.annotator.streams.test_pages import _signed_in

pytestmark = pytest.mark.django_db

DAYS, PER_DAY, CHANGE_DAY = 40, 30, 20
DAY0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


@pytest.fixture(autouse=True)
def _fewer_resamples(monkeypatch, settings):
    # The windows' intervals are not under test here: fewer bootstrap resamples keep the refresh quick.
    monkeypatch.setattr(stream_series, "BOOTSTRAP", {"n_boot": 50, "n_resamples": 50})
    settings.STREAM_ALERT_WEBHOOK_URL = "http://127.0.0.1:9/hook"


def _fed(client, name: str, *, shift: float = 0.0, judge_bias: float | None = None, seed: int = 0):
    """A stream of ``DAYS`` daily windows, every trace sampled and rated by 3 of 12 people; from
    ``CHANGE_DAY`` on, the product's quality moves by ``shift`` and the judge's bias becomes ``judge_bias``."""
    made = client.post(
        "/streams", {"name": name, "human_rate": 1.0, "k": 3, "window": "day", "judges": ["j1"]}
    )
    assert made.status_code == 201, made.content
    rng = np.random.default_rng(seed)
    effects = rng.normal(0, StreamModel().rater_sd, StreamModel().raters)
    traces, labels = [], []
    for day in range(DAYS):
        after = day >= CHANGE_DAY
        model = StreamModel(judge_bias=judge_bias) if after and judge_bias is not None else StreamModel()
        human, judge = simulate_window(
            rng, PER_DAY, 3, 0.5, model=model, effects=effects, shift=shift if after else 0.0
        )
        for i in range(PER_DAY):
            trace_id = f"{name}-{day}-{i}"
            traces.append(
                {
                    "trace_id": trace_id,
                    "timestamp": (DAY0 + dt.timedelta(days=day, minutes=i)).isoformat(),
                    "prompt": f"Question {day}.{i}?",
                    "response": "An answer.",
                    "judge_scores": [{"judge": "j1", "dimension": "coherence", "value": float(judge[i])}],
                }
            )
            labels += [
                {"trace_id": trace_id, "annotator": f"rater-{r}", "scores": {"coherence": int(v)}}
                for r, v in enumerate(human[i])
                if np.isfinite(v)
            ]
    sampled = 0
    for first in range(0, len(traces), 600):  # within the API's traces per request
        ingested = client.post(f"/streams/{name}/traces", {"traces": traces[first : first + 600]})
        assert ingested.status_code == 200 and not ingested.json()["errors"]
        sampled += len(ingested.json()["sampled"])
    assert sampled == DAYS * PER_DAY
    assert client.post(f"/streams/{name}/annotations", labels).status_code == 201
    from annotator.models import Stream

    return Stream.objects.get(name=name)


def _refreshed_twice(client, stream):
    series_refresh_all(stream_id=stream.pk)
    alerts = list(StreamAlert.objects.filter(stream=stream))
    jobs = list(Job.objects.filter(kind=Job.STREAM_ALERT))
    # A second refresh (new labels or traces elsewhere would queue one) stores and sends nothing again.
    series_refresh_all(stream_id=stream.pk)
    assert list(StreamAlert.objects.filter(stream=stream)) == alerts
    assert list(Job.objects.filter(kind=Job.STREAM_ALERT)) == jobs
    return alerts, jobs


def _change_day() -> str:
    return (DAY0 + dt.timedelta(days=CHANGE_DAY)).isoformat()


def test_a_product_change_raises_one_product_change_alert(api_as):
    client = api_as("researcher")
    stream = _fed(client, "shop", shift=-0.8)
    alerts, jobs = _refreshed_twice(client, stream)
    assert [(a.kind, a.judge, a.dimension) for a in alerts] == [("product_change", "", "coherence")]
    [alert] = alerts
    assert [j.params["alert_id"] for j in jobs] == [alert.pk]  # its signed delivery is queued
    body = client.get("/streams/shop/alerts").json()
    assert body["alerts_status"] == "computed"
    [listed] = body["alerts"]
    assert listed["kind"] == "product_change" and listed["judge"] is None
    assert listed["since"] == _change_day()
    assert listed["detected_at"] >= listed["since"]
    assert listed["evidence"]["direction"] == "down"
    assert listed["evidence"]["statistic"] >= listed["evidence"]["threshold"]
    assert listed["evidence"]["after"] < listed["evidence"]["before"]
    # The calibration series of any judge on that dimension lists it too.
    calibration = client.get("/streams/shop/calibration", judge="j1", dimension="coherence").json()
    assert [a["event_id"] for a in calibration["alerts"]] == [listed["event_id"]]
    assert calibration["alerts_status"] == "computed" and len(calibration["windows"]) == DAYS
    # The page lists it beside the charts and marks its window on both.
    page = _signed_in("researcher").get(reverse("stream_page", args=["shop"]), {"dimension": "coherence"})
    body = page.content.decode()
    assert "product_change" in body and "2026-01-21 00:00" in body
    charts = [
        base64.b64decode(uri.split(",", 1)[1]).decode()
        for uri in (page.context["agreement_svg"], page.context["means_svg"])
    ]
    assert all(svg.count("<title>alert</title>") == 1 for svg in charts)


def test_a_judge_drift_raises_one_judge_drift_alert(api_as):
    client = api_as("researcher")
    stream = _fed(client, "bot", judge_bias=1.2, seed=1)
    alerts, jobs = _refreshed_twice(client, stream)
    assert [(a.kind, a.judge, a.dimension) for a in alerts] == [("judge_drift", "j1", "coherence")]
    assert [j.params["alert_id"] for j in jobs] == [alerts[0].pk]
    [listed] = client.get("/streams/bot/alerts").json()["alerts"]
    assert listed["judge"] == "j1" and listed["since"] == _change_day()
    # Other dimensions (nobody rated them) raise nothing.
    assert client.get("/streams/bot/calibration", judge="j1", dimension="fluency").json()["alerts"] == []
