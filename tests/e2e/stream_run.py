"""The study team's production stream, end to end: the last step of the run in tests/e2e/study_run.py.

A researcher makes a stream through the API (k = 3, daily windows, half the traces sampled by the hash
rule, one judge) and pushes 18 days of simulated traces with the judge's scores (``hcs.streams.simulate``,
seeded). Labels made elsewhere for the sampled traces of the first 16 days arrive through the
annotations API: the reference the detectors need. From day 16 on the judge scores every trace 1 (its
answers are misread); the sampled traces of those two days are rated by three annotators in the browser,
through the ordinary queue and rating page. Then the worker's refresh (the ``stream_series_refresh``
task) raises a judge_drift alert, listed by ``GET /api/v1/streams/{name}/alerts`` and on the stream
page, and the worker delivers it, signed with ``X-HCS-Signature``, to a receiver on a local port.

The salt is drawn when the stream is made, so the sample differs from run to run: on this seed's
traffic, 300 of 300 random salts gave no alert on the first 16 days' labels alone and exactly one, a
judge_drift dated day 16, on all 18 (checked on ``hcs.streams.alerts.stream_alerts`` alone).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import time
from dataclasses import dataclass, field
from unittest import mock

from django.contrib.auth import get_user_model
from django.test import Client, override_settings
from django.urls import reverse

from annotator.models import Item, Stream
from annotator.services.api_tokens import api_token_create
from annotator.streams import series as stream_series
from annotator.streams.tasks import stream_series_refresh
from tests.e2e.study_run import ACTION, DIMENSIONS, SAVED, Browser, Request, StudyRun, _rating
from tests.factories import make_user
from tests.webhook_receiver import Receiver

STREAM = "e2e-support"
JUDGE = "e2e-judge"
DIMENSION = "coherence"  # the judge's dimension; people score every dimension alike
DAYS_BEFORE, DAYS_AFTER, PER_DAY, HUMAN_RATE, K = 16, 2, 30, 0.5, 3
DAY0 = dt.datetime(2026, 4, 1, tzinfo=dt.UTC)
SEED = 36
RATERS = tuple(f"e2e-stream-rater-{n}" for n in range(K))
SECRET = "e2e-stream-webhook-secret"


@dataclass
class StreamSeen:
    """What the stream's part of the run saw, for the tests to judge."""

    created: int = 0
    ingest: dict = field(default_factory=dict)
    sampled: list[str] = field(default_factory=list)
    labels_status: int = 0
    labels_saved: int = 0
    alerts_before: list = field(default_factory=list)  # after the API labels, before the browser ratings
    rated: dict = field(default_factory=dict)  # rater -> trace ids the rating page said were saved
    recent_sampled: set[str] = field(default_factory=set)  # sampled traces of the drifted days
    alerts: dict = field(default_factory=dict)  # GET /streams/{name}/alerts after the worker's refresh
    page: str = ""  # the stream page's HTML
    delivered: list = field(default_factory=list)  # (headers, body) the receiver got
    refresh_seconds: float = 0.0
    seconds: float = 0.0


def traffic() -> tuple[list[dict], dict[str, list[int]]]:
    """The traces as the API takes them, and per trace the three raters' scores."""
    import numpy as np

    from hcs.streams.simulate import StreamModel, simulate_window

    rng = np.random.default_rng(SEED)
    model = StreamModel(raters=K)
    effects = rng.normal(0, model.rater_sd, K)
    traces, people = [], {}
    for day in range(DAYS_BEFORE + DAYS_AFTER):
        human, judge = simulate_window(rng, PER_DAY, K, 0.5, model=model, effects=effects)
        if day >= DAYS_BEFORE:
            judge = np.ones_like(judge)  # the judge's answers are misread as the lowest score
        for i in range(PER_DAY):
            trace_id = f"support-{day:02d}-{i:02d}"
            traces.append(
                {
                    "trace_id": trace_id,
                    "timestamp": (DAY0 + dt.timedelta(days=day, minutes=40 * i)).isoformat(),
                    "prompt": f"Customer {day}.{i}: how do I change my plan?",
                    "response": "Open Account, then Plan, and pick the new plan; it starts next month.",
                    "judge_scores": [{"judge": JUDGE, "dimension": DIMENSION, "value": float(judge[i])}],
                }
            )
            people[trace_id] = [int(v) for v in human[i]]
    return traces, people


def stream_run(run: StudyRun) -> StreamSeen:
    """The stream's part of the run; every request is logged in ``run`` (so no 5xx is checked too)."""
    seen = StreamSeen()
    started = time.monotonic()
    researcher = get_user_model().objects.get(username="e2e-researcher")
    _token, key = api_token_create(user=researcher, name="e2e stream", days=1)
    api = Client(headers={"Authorization": f"Bearer {key}"})

    def call(method: str, path: str, body=None):
        url = "/api/v1" + path
        if method == "GET":
            answer = api.get(url)
        else:
            answer = api.post(url, body, content_type="application/json")
        run.log(Request("researcher-api", method, path, answer.status_code))
        return answer

    for name in RATERS:
        make_user(name, role="annotator")
    traces, people = traffic()
    # The windows' bootstrap intervals are not under test here: fewer resamples keep the refreshes quick.
    few = mock.patch.object(stream_series, "BOOTSTRAP", {"n_boot": 50, "n_resamples": 50})
    with (
        Receiver(path="/hcs-alerts") as receiver,
        few,
        override_settings(
            STREAM_ALERT_WEBHOOK_URL=receiver.url,
            STREAM_ALERT_WEBHOOK_SECRET=SECRET,
            STREAM_ALERT_WEBHOOK_ATTEMPTS=2,
            STREAM_ALERT_WEBHOOK_BACKOFF_SECONDS=0,
        ),
    ):
        made = call(
            "POST",
            "/streams",
            {"name": STREAM, "human_rate": HUMAN_RATE, "k": K, "window": "day", "judges": [JUDGE]},
        )
        seen.created = made.status_code
        pushed = call("POST", f"/streams/{STREAM}/traces", {"traces": traces})
        seen.ingest = pushed.json()
        seen.sampled = seen.ingest.get("sampled", [])
        first_drifted = f"support-{DAYS_BEFORE:02d}-"
        earlier = [t for t in seen.sampled if t < first_drifted]
        seen.recent_sampled = {t for t in seen.sampled if t >= first_drifted}
        labels = [
            {"trace_id": t, "annotator": rater, "scores": dict.fromkeys(DIMENSIONS, people[t][r])}
            for t in earlier
            for r, rater in enumerate(RATERS)
        ]
        answer = call("POST", f"/streams/{STREAM}/annotations", labels)
        seen.labels_status, seen.labels_saved = answer.status_code, len(labels)
        seen.alerts_before = call("GET", f"/streams/{STREAM}/alerts").json()["alerts"]
        stream = Stream.objects.get(name=STREAM)
        for r, rater in enumerate(RATERS):
            seen.rated[rater] = _rates_in_the_browser(run, stream, rater, people, r)
        began = time.monotonic()
        stream_series_refresh.enqueue(
            stream_id=stream.pk
        )  # the worker's task, run at once by the tests' backend
        seen.refresh_seconds = time.monotonic() - began
        seen.alerts = call("GET", f"/streams/{STREAM}/alerts").json()
        page = Browser(run, "researcher")
        page.client.force_login(researcher)
        seen.page = page.tab().get(reverse("stream_page", args=[STREAM]) + f"?dimension={DIMENSION}").text
        seen.delivered = list(receiver.requests)
    seen.seconds = time.monotonic() - started
    return seen


def _rates_in_the_browser(run: StudyRun, stream: Stream, rater: str, people, column: int) -> list[str]:
    """One annotator rates the stream's items the queue gives them, on the rating page, until it says there
    is nothing left; returns the trace ids of the ratings the page said were saved. Plain forms for one
    rater, htmx for the others, as the study's workers send them."""
    browser = Browser(run, rater)
    browser.client.force_login(get_user_model().objects.get(username=rater))
    tab = browser.tab()
    page = tab.get(reverse("annotate_next", args=[stream.batch_id]))
    saved = []
    for _step in range(4 * PER_DAY * DAYS_AFTER):
        found = ACTION.search(page.text)
        if found is None:
            break
        url, pk = found.group(1), int(found.group(3))
        trace_id = Item.objects.get(pk=pk).item_id  # the test's oracle: the page never names the trace
        scores = dict.fromkeys(DIMENSIONS, people[trace_id][column])
        page = tab.post(url, _rating(page.text, scores), htmx=column > 0)
        if SAVED in page.text:
            saved.append(trace_id)
    return saved


def signature_valid(headers: dict, body: bytes) -> bool:
    expected = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(headers.get("X-HCS-Signature", ""), expected)
