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


def test_the_page_plots_the_series_and_says_no_alert_was_found(api_as, stream):
    _fed(api_as)
    response = _signed_in("researcher").get(
        reverse("stream_page", args=["prod-chat"]), {"dimension": "coherence"}
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert body.count("data:image/svg+xml;base64,") == 2
    assert "No alerts: no judge drift" in body
    assert len(response.context["rows"]) == 2
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
