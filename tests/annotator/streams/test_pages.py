"""The stream pages: researchers see the series plotted and download it as a formula-safe CSV; annotators,
crowd workers included, never see them, while rating the stream's sampled traces in the ordinary queue."""

from __future__ import annotations

import csv
import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse
from django.utils.html import escape

from annotator.models import Annotation, Item, Trace
from annotator.streams.views import CSV_COLUMNS
from tests.annotator.streams.conftest import trace
from tests.annotator.study_support import arrive, prolific_link, rate_next, start
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def _signed_in(role: str) -> Client:
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.filter(username=f"page-{role}").first() or make_user(
        f"page-{role}", role=role
    )
    client = Client()
    client.force_login(user)
    return client


def _fed(api_as):
    client = api_as("researcher")
    client.post(
        "/streams/prod-chat/traces", {"traces": [trace(i, day=1 + i % 2, score=1 + i % 5) for i in range(24)]}
    )
    return client


def test_the_page_plots_the_series_and_says_why_nothing_was_detected(api_as, stream):
    _fed(api_as)
    response = _signed_in("researcher").get(
        reverse("stream_page", args=["prod-chat"]), {"dimension": "coherence"}
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert body.count("data:image/svg+xml;base64,") == 3  # agreement, means, the detectors' statistics
    # Two windows and no human label: nothing could be detected, and the page does not say "no drift".
    assert "No alerts: no judge drift" not in body
    assert "No human labels yet, so nothing can be detected" in body
    assert "Detection starts after 14 windows with human labels (the reference); 0 so far" in body
    assert len(response.context["rows"]) == 2
    table = body.split("<h2>Per window</h2>", 1)[1]
    assert ">Judge-scored<" in table and ">Paired<" in table and "PPI++ [95% CI, window's traces]" in table
    assert stream.salt in body  # the sampling rule's salt is on the page
    listing = _signed_in("researcher").get(reverse("stream_list")).content.decode()
    assert reverse("stream_page", args=["prod-chat"]) in listing


def test_researchers_find_streams_in_the_navigation(stream):
    body = _signed_in("researcher").get(reverse("report_list")).content.decode()
    assert f'href="{reverse("stream_list")}"' in body
    assert (
        f'href="{reverse("stream_list")}"'
        not in _signed_in("annotator").get(reverse("home")).content.decode()
    )


def test_the_csv_is_the_series_with_formulas_defused(api_as, stream):
    _fed(api_as)
    response = _signed_in("researcher").get(
        reverse("stream_series_csv", args=["prod-chat"]), {"judge": "j1", "dimension": "coherence"}
    )
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert rows[0] == CSV_COLUMNS and len(rows) == 3
    assert rows[1][0].startswith("2026-03-01") and rows[1][2] == "12" and rows[1][4] == "qwk"
    # The judge's counts come last, after the columns of the first release, which keep their places.
    assert CSV_COLUMNS[:4] == ["start", "end", "n_traces", "n_human"]
    assert CSV_COLUMNS[-3:] == ["human_alpha_high", "n_judge", "n_paired"]
    assert rows[1][-2:] == ["12", "0"]  # j1 scored the day's 12 traces; nobody has labelled any
    # A negative number stays a number (the defusing keeps plain numbers as they are).
    for row in rows[1:]:
        assert all(not cell.startswith("'") for cell in row)


def test_an_unknown_judge_is_404_on_the_page(stream):
    page = _signed_in("researcher").get(reverse("stream_page", args=["prod-chat"]), {"judge": "nobody"})
    assert page.status_code == 404


def test_crowd_workers_rate_sampled_traces_but_never_see_the_stream_pages(api_as, stream):
    sampled = (
        api_as("researcher")
        .post("/streams/prod-chat/traces", {"traces": [trace(i) for i in range(10)]})
        .json()["sampled"]
    )
    assert sampled
    link, token = prolific_link(stream.batch)
    worker, response = arrive(token)
    assert response.status_code == 302
    start(worker, stream.batch)
    for name in ("stream_list",):
        assert worker.get(reverse(name)).status_code == 403
    for name in ("stream_page", "stream_series_csv"):
        assert worker.get(reverse(name, args=["prod-chat"])).status_code == 403
    # Blind rating in the ordinary queue: the page shows the trace's text, never its trace_id.
    page = worker.get(reverse("annotate_next", args=[stream.batch.pk]))
    assert page.status_code == 200
    item = page.context["item"]
    assert item.item_id in sampled and item.item_id not in page.content.decode()
    rate_next(worker, stream.batch)
    assert Annotation.objects.filter(item__batch=stream.batch).count() == 1


def test_stream_ingest_command_reads_a_file_like_the_api(stream, tmp_path, capsys):
    import json

    path = tmp_path / "traces.jsonl"
    lines = [json.dumps(trace(i)) for i in range(5)] + [
        "{not json",
        json.dumps(trace(1)),
        json.dumps({"trace_id": "x"}),
    ]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(CommandError, match="2 line"):
        call_command("stream_ingest", "prod-chat", str(path))
    out, err = capsys.readouterr()
    assert "5 accepted, 1 duplicates" in out
    assert "line 6: not JSON" in err and "line 8 (trace_id 'x')" in err
    assert Trace.objects.count() == 5
    assert Item.objects.filter(batch=stream.batch).count() == Trace.objects.filter(sampled=True).count()


def test_the_chart_draws_lines_bands_and_gaps():
    import base64

    from annotator.plots import series_svg

    uri = series_svg(
        ["d1", "d2", "d3", "d4"],
        {
            "qwk": [(0.5, 0.3, 0.7), (None, None, None), (0.6, 0.4, 0.8), (0.7, None, None)],
            "<α>": [(0.2, None, None)] * 4,
        },
        ylabel="agreement",
    )
    svg = base64.b64decode(uri.split(",", 1)[1]).decode()
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert svg.count("<polyline") == 3  # qwk: two runs around the gap; α: one
    assert svg.count("<polygon") == 2  # the bands of windows 1 and 3
    assert "&lt;α&gt;" in svg  # names are escaped


def _alert(stream, judge: str, dimension: str, day: int, kind: str = "judge_drift"):
    import datetime as dt

    from annotator.models import StreamAlert

    start = dt.datetime(2026, 3, day, tzinfo=dt.UTC)
    return StreamAlert.objects.create(
        stream=stream,
        judge=judge,
        dimension=dimension,
        kind=kind,
        window_start=start,
        window_end=start + dt.timedelta(days=1),
        detail={
            "detected_at": start.isoformat(),
            "since": start.isoformat(),
            "evidence": {"before": 0.973, "after": 0.818},
        },
    )


def _svg(uri: str) -> str:
    import base64

    return base64.b64decode(uri.split(",", 1)[1]).decode()


def test_the_page_lists_every_alert_of_the_stream_and_marks_the_ones_charted(api_as, stream):
    _fed(api_as)
    _alert(stream, "j2", "coherence", 2)
    page = _signed_in("researcher").get(
        reverse("stream_page", args=["prod-chat"]), {"judge": "j1", "dimension": "coherence"}
    )
    body = page.content.decode()
    # j1 has no alert, j2 has one on the same dimension: it is listed, with its judge and dimension.
    assert "No alerts" not in body and "No alert on j1 × coherence" in body
    [row] = page.context["alert_rows"]
    assert row["alert"].judge == "j2" and not row["shown"]
    assert "<td>j2</td><td>coherence</td>" in body and "0.973 → 0.818" in body
    assert "?judge=j2&amp;dimension=coherence" in body  # a link to its series
    assert "<title>alert</title>" not in _svg(page.context["agreement_svg"])
    page = _signed_in("researcher").get(
        reverse("stream_page", args=["prod-chat"]), {"judge": "j2", "dimension": "coherence"}
    )
    [row] = page.context["alert_rows"]
    assert row["shown"] and 'title="on the charts below"' in page.content.decode()
    for chart in ("agreement_svg", "means_svg", "detector_svg"):
        assert _svg(page.context[chart]).count("<title>alert</title>") == 1


def test_the_list_shows_each_stream_s_alerts_and_last_trace(api_as, stream):
    _fed(api_as)
    _alert(stream, "", "fluency", 1, kind="rater_drift")
    latest = _alert(stream, "j2", "coherence", 2)
    page = _signed_in("researcher").get(reverse("stream_list"))
    body = page.content.decode()
    [listed] = page.context["streams"]
    assert listed.n_alerts == 2 and listed.latest_alert == latest
    assert f'{reverse("stream_page", args=["prod-chat"])}#alerts">2</a>' in body
    assert "?judge=j2&amp;dimension=coherence#alerts" in body and "judge_drift" in body
    assert "since 2 Mar 2026" in body
    assert "2 Mar 2026 12:" in body  # the last trace (day 2, 12:xx UTC)


def test_the_page_says_how_to_read_it(api_as, stream):
    _fed(api_as)
    body = _signed_in("researcher").get(reverse("stream_page", args=["prod-chat"])).content.decode()
    assert "How to read this" in body
    assert "reference of the first 14 windows" in body
    assert "P(a false alarm within 90 windows) ≤ 0.05 per detector" in body
    assert "probability 0.5" in body and escape(stream.sampling_rule) in body
    assert "background worker refreshes" in body
    assert "docs/streams.md" in body and "docs/streams-statistics.md" in body


def test_the_page_plots_what_the_detectors_watch(api_as, stream):
    """The third chart is the per-window mean of each detector's per-trace statistic, the figures an
    alert's before → after average: checked against the hcs functions on the same labels."""
    import numpy as np

    from hcs.streams.alerts import item_agreement, item_level

    client = _fed(api_as)
    url, choice = reverse("stream_page", args=["prod-chat"]), {"judge": "j1", "dimension": "coherence"}
    before = _signed_in("researcher").get(url, choice).context["detector_means"]
    assert before["judge_drift"] == [(None, 0), (None, 0)]  # no labels yet
    sampled = sorted(Trace.objects.filter(sampled=True, timestamp__day=1).values_list("trace_id", flat=True))
    human = {t: [1 + (int(t[2:]) + s) % 5 for s in (0, 1, 3)] for t in sampled}
    labels = [
        {"trace_id": t, "annotator": f"ann-{a}", "scores": {"coherence": v}}
        for t in sampled
        for a, v in enumerate(human[t])
    ]
    assert client.post("/streams/prod-chat/annotations", labels).status_code == 201
    page = _signed_in("researcher").get(url, choice)  # the labels are seen, not a cached copy
    means = page.context["detector_means"]
    judge = {t: 1 + int(t[2:]) % 5 for t in sampled}  # _fed's judge score of trace i
    ratings = np.array([human[t] for t in sampled], dtype=float)
    scores = np.array([judge[t] for t in sampled], dtype=float)
    assert means["judge_drift"][0] == (pytest.approx(item_agreement(scores, ratings).mean()), len(sampled))
    assert means["product_change"][0][0] == pytest.approx(item_level(ratings).mean())
    assert means["judge_drift"][1] == (None, 0)  # day 2: nobody rated it
    assert "judge_drift" in _svg(page.context["detector_svg"])


def test_the_page_writes_dates_for_people(api_as, stream):
    _fed(api_as)
    page = _signed_in("researcher").get(reverse("stream_page", args=["prod-chat"]))
    body = page.content.decode()
    assert [w["label"] for w in page.context["windows"]] == ["1 Mar 2026", "2 Mar 2026"]
    assert "2026-03-01" not in body.split("Per window", 1)[1]
    assert "1 Mar 2026" in _svg(page.context["agreement_svg"])


def test_dates_show_the_time_only_when_a_window_is_not_whole_days():
    import datetime as dt

    from annotator.streams.views import when, window_label

    day = dt.datetime(2026, 12, 7, tzinfo=dt.UTC)
    assert when(day) == "7 Dec 2026" and when(day.isoformat()) == "7 Dec 2026"
    assert window_label(day, day + dt.timedelta(days=1)) == "7 Dec 2026"
    assert window_label(day, day + dt.timedelta(days=7)) == "7 Dec 2026 – 13 Dec 2026"
    later = day + dt.timedelta(hours=14, minutes=5)
    assert window_label(later, later + dt.timedelta(hours=3)) == "7 Dec 2026 14:05 – 7 Dec 2026 17:05"
    # A count window from midnight to a time of day: both ends with their times.
    assert window_label(day, later) == "7 Dec 2026 00:00 – 7 Dec 2026 14:05"
    # A count stream's last window is still filling: it ends a microsecond after its latest trace.
    tick = dt.timedelta(microseconds=1)
    assert window_label(later, later + tick, open_end=True) == "7 Dec 2026 14:05 onwards (open)"
    assert when(None) == "—"


def test_names_are_escaped_on_the_pages(api_as):
    client = api_as("researcher")
    judge = '<b>j"&amp;</b>'
    made = client.post(
        "/streams", {"name": "esc", "human_rate": 1.0, "k": 3, "window": "day", "judges": [judge]}
    )
    assert made.status_code == 201, made.content
    from annotator.models import Stream

    stream = Stream.objects.get(name="esc")
    client.post("/streams/esc/traces", {"traces": [trace(i, score=None) for i in range(4)]})
    _alert(stream, judge, "coherence", 1)
    for page in (
        _signed_in("researcher").get(reverse("stream_page", args=["esc"])),
        _signed_in("researcher").get(reverse("stream_list")),
    ):
        body = page.content.decode()
        assert page.status_code == 200
        assert "<b>j" not in body and escape(judge) in body
    # In the list's link to the latest alert's series the name is URL-encoded.
    assert "?judge=%3Cb%3Ej%22%26amp%3B%3C/b%3E&amp;dimension=coherence#alerts" in body


def test_detection_progress_follows_the_detector_s_reference():
    """As in ``detect_changes``: windows without labels are skipped, the reference is the first 14 windows
    with labels, and each later window with labels is checked."""
    import numpy as np

    from annotator.streams.selectors import detection_progress
    from hcs.streams.alerts import detect_changes

    def progress(n):
        return detection_progress(n, reference_windows=14)

    assert progress([])["message"].startswith("No human labels yet")
    assert "14 windows with human labels (the reference); 2 so far" in progress([5, 5])["message"]
    full = progress([5] * 14)
    assert full["reference_windows_so_far"] == 14 and not full["monitoring"]
    assert "detection starts with the next window" in full["message"]
    # Labels only from window 20, with a gap: the reference is windows 20–34, then 35 and 36 are checked.
    late = [0] * 20 + [5] * 5 + [0] + [5] * 11
    assert progress(late)["monitored_windows"] == 2 and progress(late)["monitoring"]
    assert (
        "2 windows with human labels after the first 14 (the reference) have been checked"
        in (progress(late)["message"])
    )
    assert "the next 14 windows with labels become the new reference" in progress(late)["message"]
    # The detector agrees: a fall in the last window is found, so windows 35 and 36 were checked.
    rng = np.random.default_rng(0)
    data = [rng.uniform(0.8, 1.0, n) for n in late[:-1]] + [np.zeros(400)]
    [alarm] = detect_changes(data)
    assert alarm.reference == (20, 34) and alarm.detected_at == 36


def test_a_stream_without_judges_lists_its_alerts(api_as):
    client = api_as("researcher")
    made = client.post(
        "/streams", {"name": "plain", "human_rate": 1.0, "k": 3, "window": "day", "judges": []}
    )
    assert made.status_code == 201, made.content
    from annotator.models import Stream

    stream = Stream.objects.get(name="plain")
    client.post("/streams/plain/traces", {"traces": [trace(i, score=None) for i in range(4)]})
    _alert(stream, "", "coherence", 1, kind="product_change")
    page = _signed_in("researcher").get(reverse("stream_page", args=["plain"]))
    body = page.content.decode()
    assert page.status_code == 200 and "no calibration series" in body
    [row] = page.context["alert_rows"]
    assert row["alert"].kind == "product_change" and row["judge"] == "" and "show</a>" not in body
    assert client.get("/streams/plain/alerts").json()["detection"] == {}


def test_no_alert_is_reported_as_no_drift_only_where_the_detectors_watched(api_as, stream, monkeypatch):
    from annotator.streams import selectors

    client = _fed(api_as)
    url, choice = reverse("stream_page", args=["prod-chat"]), {"dimension": "coherence"}
    sampled = Trace.objects.filter(sampled=True).values_list("trace_id", flat=True)
    labels = [{"trace_id": t, "annotator": a, "scores": {"coherence": 3}} for t in sampled for a in "abc"]
    assert client.post("/streams/prod-chat/annotations", labels).status_code == 201
    page = _signed_in("researcher").get(url, choice)
    assert page.context["progress"]["monitoring"] is False  # 2 windows, 14 needed
    assert "was detected" not in page.content.decode()
    # With a reference of one window, the second day is checked: now "no alert" means no drift found.
    settings = {"reference_windows": 1, "alpha": 0.05, "horizon_windows": 90}
    monkeypatch.setattr(selectors, "detector_settings", lambda: settings)
    page = _signed_in("researcher").get(url, choice)
    assert page.context["progress"]["monitored_windows"] == 1
    assert (
        "No alerts on this stream: on coherence, no judge drift, product change or rater drift was detected."
        in (page.content.decode())
    )


def test_a_count_streams_last_window_is_written_open(api_as):
    client = api_as("researcher")
    made = client.post(
        "/streams", {"name": "counted", "human_rate": 1.0, "k": 3, "window": 5, "judges": ["j1"]}
    )
    assert made.status_code == 201, made.content
    client.post("/streams/counted/traces", {"traces": [trace(i, day=1, score=3) for i in range(7)]})
    page = _signed_in("researcher").get(reverse("stream_page", args=["counted"]))
    labels = [w["label"] for w in page.context["windows"]]
    assert len(labels) == 2 and labels[-1].endswith("onwards (open)") and "onwards" not in labels[0]
    # Five labelled traces per window at most: QWK and α are withheld, and the page says why.
    assert page.context["windows"][0]["qwk_withheld"].startswith("fewer than 10 paired traces (")
    assert 'title="withheld: fewer than 10 paired traces (' in page.content.decode()
