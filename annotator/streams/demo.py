"""The demo's stream: 60 days of a support assistant's simulated traffic, scored by an online judge, with
a share labelled by people, one product change and one judge drift planted (``manage.py load_demo``).

Everything goes through the app's own services: the stream is made by ``stream_create``, the traces
(with the judge's pushed scores) by ``traces_ingest``, the people's labels by the stream's annotations
service (named raters, as labels made elsewhere arrive), and the series and alerts by the worker's
refresh. The traffic comes from ``hcs.streams.simulate`` with a fixed seed, and the stream's salt is
fixed too, so every machine samples the same traces and shows the same two alerts.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction
from django.urls import reverse

from annotator.models import Stream, StreamAlert
from annotator.roles import RESEARCHER
from annotator.streams.services.annotations import stream_annotations_import
from annotator.streams.services.ingest import MAX_TRACES, traces_ingest
from annotator.streams.services.series import series_refresh_all
from annotator.streams.services.streams import stream_create
from hcs.rubric import Rubric

DEMO_STREAM = "demo-support-chat"
DEMO_JUDGE = "demo-online-judge"
DEMO_OWNER = "researcher"  # the demo account create_demo_users gives a password
DIMENSION = "helpfulness"
DAYS, PER_DAY, HUMAN_RATE, K = 60, 40, 0.5, 3
DAY0 = dt.datetime(2026, 1, 5, tzinfo=dt.UTC)
# The planted changes: release v2 makes the answers worse from day 20 (the judge follows: a product
# change), and from day 40 the judge's provider serves a lenient model (a judge drift).
PRODUCT_CHANGE_DAY, PRODUCT_SHIFT = 20, -0.8
JUDGE_DRIFT_DAY, JUDGE_BIAS_AFTER = 40, 1.2
JUDGE_NOISE = 0.5
SEED = 20260105
# A fixed salt: the sampled traces, hence the windows' numbers and the alerts' dates, are the same on
# every machine (a real stream draws its salt when it is made).
DEMO_SALT = "demo-support-chat-0001"
RATERS = 12

RUBRIC = {
    "name": "support-helpfulness",
    "version": "1",
    "title": "Support answers: helpfulness",
    "scale": {"min": 1, "max": 5},
    "dimensions": [
        {
            "key": DIMENSION,
            "label": "Helpfulness",
            "weight": 1.0,
            "description": "Does the answer solve the customer's problem?",
            "levels": {
                "1": "Wrong or unrelated: the customer is no better off",
                "2": "Mostly unhelpful: a fragment of the answer, or misleading",
                "3": "Partly solves it: correct but incomplete, or needs a follow-up",
                "4": "Solves it, with small gaps or extra steps",
                "5": "Solves it completely and clearly",
            },
        }
    ],
}

TOPICS = [
    ("reset my password", "Open Settings → Security → Reset password and follow the e-mailed link."),
    ("change my delivery address", "Go to Orders, pick the order and choose Edit address before it ships."),
    ("get a refund", "Refunds are issued from Orders → Return item; the money is back in 5–7 days."),
    ("cancel my subscription", "Open Account → Subscription → Cancel; you keep access to the period's end."),
    ("download my invoice", "Every invoice is under Orders → Invoices as a PDF."),
    ("add a second user", "Admins add people under Team → Invite; each person gets an e-mail."),
    ("export my data", "Account → Privacy → Export prepares a ZIP file and e-mails you a link."),
    ("use a discount code", "Enter the code at checkout in the Promo field before paying."),
]


@dataclass(frozen=True)
class DemoTraffic:
    traces: list[dict]  # as the traces API takes them, the judge's score included
    human: dict[str, list[tuple[str, int]]]  # trace_id → (rater, score) for every trace, sampled or not


def demo_traffic(*, seed: int = SEED) -> DemoTraffic:
    """The 60 days of traffic, drawn from ``hcs.streams.simulate`` with ``seed``: each trace's judge score
    and three raters' scores (only the sampled traces' labels are sent)."""
    import numpy as np  # the demo's loader only: the web process never imports this module

    from hcs.streams.simulate import StreamModel, simulate_window

    rng = np.random.default_rng(seed)
    effects = rng.normal(0, StreamModel().rater_sd, RATERS)
    traces, human = [], {}
    for day in range(DAYS):
        release = "v2" if day >= PRODUCT_CHANGE_DAY else "v1"
        bias = JUDGE_BIAS_AFTER if day >= JUDGE_DRIFT_DAY else StreamModel().judge_bias
        scores, judge = simulate_window(
            rng,
            PER_DAY,
            K,
            JUDGE_NOISE,
            model=StreamModel(raters=RATERS, judge_bias=bias),
            effects=effects,
            shift=PRODUCT_SHIFT if release == "v2" else 0.0,
        )
        for i in range(PER_DAY):
            trace_id = f"chat-{day:02d}-{i:03d}"
            question, answer = TOPICS[(day * 7 + i) % len(TOPICS)]
            when = DAY0 + dt.timedelta(days=day, seconds=int((i + rng.random()) * 86_400 / PER_DAY))
            traces.append(
                {
                    "trace_id": trace_id,
                    "timestamp": when.isoformat(),
                    "prompt": f"How do I {question}? (conversation {day * PER_DAY + i + 1})",
                    "response": answer,
                    "system_id": f"support-bot {release}",
                    "metadata": {"release": release},
                    "judge_scores": [{"judge": DEMO_JUDGE, "dimension": DIMENSION, "value": float(judge[i])}],
                }
            )
            human[trace_id] = [
                (f"support-rater-{r + 1:02d}", int(v)) for r, v in enumerate(scores[i]) if np.isfinite(v)
            ]
    return DemoTraffic(traces, human)


def _owner():
    user, created = get_user_model().objects.get_or_create(username=DEMO_OWNER)
    if created:
        user.set_unusable_password()  # create_demo_users gives it its demo password
        user.save()
    user.groups.add(Group.objects.get_or_create(name=RESEARCHER)[0])
    return user


@transaction.atomic
def _made() -> tuple[Stream, int, int, int]:
    """The stream, its traces and its labels, in one transaction: an interrupted load leaves nothing."""
    owner = _owner()
    stream = stream_create(
        name=DEMO_STREAM,
        human_rate=HUMAN_RATE,
        k=K,
        window="day",
        judges=[DEMO_JUDGE],
        created_by=owner,
        rubric=Rubric.from_dict(RUBRIC),
    )
    Stream.objects.filter(pk=stream.pk).update(salt=DEMO_SALT)
    stream.salt = DEMO_SALT
    traffic = demo_traffic()
    sampled = []
    for first in range(0, len(traffic.traces), MAX_TRACES):
        result = traces_ingest(stream=stream, traces=traffic.traces[first : first + MAX_TRACES])
        if result.errors:
            raise RuntimeError(f"the demo's traces were refused: {result.errors[:3]}")
        sampled += result.sampled
    labels = [
        {"trace_id": trace_id, "annotator": rater, "scores": {DIMENSION: score}}
        for trace_id in sampled
        for rater, score in traffic.human[trace_id]
    ]
    stream_annotations_import(stream=stream, labels=labels, created_by=owner)
    return stream, len(traffic.traces), len(sampled), len(labels)


def demo_stream_load(*, site_url: str) -> list[str]:
    """Make the demo stream unless it is there, compute its series and alerts; returns lines to print.
    Idempotent: a stream already made with its alerts is left as it is."""
    lines = []
    stream = Stream.objects.filter(name=DEMO_STREAM).first()
    if stream is None:
        stream, n_traces, n_sampled, n_labels = _made()
        lines.append(
            f"Created the stream \u201c{DEMO_STREAM}\u201d: {n_traces} simulated traces over {DAYS} days "
            f"scored by the judge \u201c{DEMO_JUDGE}\u201d, {n_sampled} of them sampled for people and "
            f"labelled ({n_labels} labels by {RATERS} raters)."
        )
    else:
        lines.append(f"Stream \u201c{DEMO_STREAM}\u201d already exists ({stream.traces.count()} traces).")
    if not StreamAlert.objects.filter(stream=stream).exists():
        series_refresh_all(stream_id=stream.pk)
    alerts = sorted(StreamAlert.objects.filter(stream=stream), key=lambda a: a.window_start)
    found = ", ".join(f"{a.kind} since {a.window_start:%Y-%m-%d}" for a in alerts) or "none yet"
    lines.append(f"Stream page of \u201c{DEMO_STREAM}\u201d (sign in as researcher; alerts: {found}):")
    lines.append("  " + site_url.rstrip("/") + reverse("stream_page", args=[DEMO_STREAM]))
    return lines
