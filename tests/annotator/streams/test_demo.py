"""The demo's stream (``annotator.streams.demo``, loaded by ``manage.py load_demo``): 60 simulated days
through the app's services, both planted changes raised on the days they were planted and shown on the
stream page, and a second load that changes nothing."""

from __future__ import annotations

import base64
import datetime as dt
import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from annotator.models import (
    Annotation,
    Item,
    Score,
    Stream,
    StreamAlert,
    StreamChange,
    StreamWindowStat,
    Trace,
    TraceScore,
)
from annotator.streams import demo
from annotator.streams.sampling import is_sampled

pytestmark = pytest.mark.django_db


def _load() -> str:
    out = StringIO()
    call_command("load_demo", stdout=out)
    return out.getvalue()


def _snapshot(stream: Stream) -> dict:
    """Every row the stream's loader writes, as values: equal snapshots mean nothing changed."""
    return {
        "stream": list(Stream.objects.filter(pk=stream.pk).values()),
        "traces": list(Trace.objects.filter(stream=stream).order_by("pk").values()),
        "scores": list(TraceScore.objects.filter(stream=stream).order_by("pk").values()),
        "items": list(Item.objects.filter(batch=stream.batch).order_by("pk").values()),
        "annotations": list(Annotation.objects.filter(item__batch=stream.batch).order_by("pk").values()),
        "labels": list(Score.objects.filter(item__batch=stream.batch).order_by("pk").values()),
        "changes": list(StreamChange.objects.filter(stream=stream).order_by("pk").values()),
        "windows": list(StreamWindowStat.objects.filter(stream=stream).order_by("pk").values()),
        "alerts": list(StreamAlert.objects.filter(stream=stream).order_by("pk").values()),
    }


def _day(n: int) -> dt.datetime:
    return demo.DAY0 + dt.timedelta(days=n)


def test_the_demo_stream_raises_both_planted_changes_and_loads_once():
    out = _load()
    stream = Stream.objects.get(name=demo.DEMO_STREAM)
    traces = Trace.objects.filter(stream=stream)
    assert traces.count() == demo.DAYS * demo.PER_DAY
    assert TraceScore.objects.filter(stream=stream, judge=demo.DEMO_JUDGE).count() == traces.count()
    # The hash rule chose the sample, and every sampled trace has exactly k labels from the named raters.
    sampled = list(traces.filter(sampled=True).values_list("trace_id", flat=True))
    assert sampled == [
        t for t in traces.values_list("trace_id", flat=True) if is_sampled(stream.salt, t, 0.5)
    ]
    assert 0.4 < len(sampled) / traces.count() < 0.6
    assert {i.n_annotations for i in stream.batch.items.all()} == {demo.K}
    assert Score.objects.filter(item__batch=stream.batch).count() == demo.K * len(sampled)
    assert f"Created the stream \u201c{demo.DEMO_STREAM}\u201d" in out
    # One alert per planted change, each dated on the day it was planted and seen within a few days.
    alerts = sorted(StreamAlert.objects.filter(stream=stream), key=lambda a: a.window_start)
    assert [(a.kind, a.judge, a.window_start) for a in alerts] == [
        ("product_change", "", _day(demo.PRODUCT_CHANGE_DAY)),
        ("judge_drift", demo.DEMO_JUDGE, _day(demo.JUDGE_DRIFT_DAY)),
    ]
    for alert in alerts:
        detected = dt.datetime.fromisoformat(alert.detail["detected_at"])
        assert alert.window_start <= detected <= alert.window_start + dt.timedelta(days=7)
    product, drift = alerts
    assert product.detail["evidence"]["after"] < product.detail["evidence"]["before"]  # release v2 is worse
    assert drift.detail["evidence"]["direction"] == "down"
    assert "product_change since 2026-01-25, judge_drift since 2026-02-14" in out

    before = _snapshot(stream)
    again = _load()
    assert f"Stream \u201c{demo.DEMO_STREAM}\u201d already exists" in again
    assert _snapshot(stream) == before


def test_the_printed_stream_page_shows_both_alerts():
    out = _load()
    [link] = re.findall(r"^\s+(http://\S+/streams/\S+)$", out, flags=re.M)
    assert link == "http://127.0.0.1:8000" + reverse("stream_page", args=[demo.DEMO_STREAM])
    call_command("create_demo_users", stdout=StringIO())
    client = Client()
    assert client.login(username="researcher", password="researcher-demo-pass")
    page = client.get(link.removeprefix("http://127.0.0.1:8000"))
    assert page.status_code == 200
    body = page.content.decode()
    assert "product_change" in body and "judge_drift" in body
    assert "2026-01-25" in body and "2026-02-14" in body
    charts = [
        base64.b64decode(uri.split(",", 1)[1]).decode()
        for uri in (page.context["agreement_svg"], page.context["means_svg"])
    ]
    assert all(svg.count("<title>alert</title>") == 2 for svg in charts)
    assert len(page.context["series"].windows) == demo.DAYS
