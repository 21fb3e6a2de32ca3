"""Streams on PostgreSQL: the worker's refresh (series and alerts) and the reads right after a backfill,
at 10⁶ traces and 20,000 human labels.

``python bench/stream_refresh_bench.py [--url postgres://postgres@127.0.0.1:5432/bench_streams] [--traces 1000000]
[--labels 20000] [--reuse]`` builds the stream in-process (``--reuse``: keep the one a previous run built),
daily windows over 60 days, one judge scoring coherence on every trace, the sampled traces labelled by 3
people on all five dimensions of the default rubric. No worker runs: the bench calls the refresh itself.

1. The worker's refresh: every window computed (stored windows deleted), then with nothing stale (what
   is left is the alerts), and the alerts' reads alone: one ``alert_data`` per dimension against one
   ``alerts_data`` for all of them, when the code has it.
2. Reads of ``GET /api/v1/streams/{name}/calibration`` and of the stream page: warm, right after a backfill
   that touched every window (each repetition marks every window changed again, as a backfill that the
   worker has not refreshed yet), and with 1 .. 8 stale windows (how much a read computing them costs).

Prints one table per part, medians of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import inspect
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# The ingest bench's traces (and its fresh database): the same stream, read and refreshed here.
from bench.stream_ingest_bench import _fresh_postgres, django_on, traces  # noqa: E402

NAME = "bench-refresh"
DIMENSIONS = ("coherence", "relevance", "instruction_following", "safety_compliance", "fluency")


def _analyze() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def build(total: int, n_labels: int, researcher):
    from annotator.models import Trace
    from annotator.streams.services.annotations import stream_annotations_import
    from annotator.streams.services.ingest import traces_ingest
    from annotator.streams.services.streams import stream_create

    stream = stream_create(
        name=NAME,
        human_rate=n_labels / 3 / total,
        k=3,
        window="day",
        judges=["gpt-judge"],
        created_by=researcher,
    )
    t0 = time.perf_counter()
    for chunk, first in enumerate(range(0, total, 1000)):
        traces_ingest(stream=stream, traces=traces(first, min(1000, total - first), total))
        if chunk & (chunk - 1) == 0:  # the worker's ANALYZE as the table doubles (no worker runs here)
            _analyze()
    fill = time.perf_counter() - t0
    sampled = list(Trace.objects.filter(stream=stream, sampled=True).values_list("trace_id", flat=True))
    rng = random.Random(1)
    labels = [
        {
            "trace_id": t,
            "annotator": f"person-{a}",
            "scores": {d: max(1, min(5, 1 + int(t[4:]) % 5 + rng.choice((-1, 0, 0, 1)))) for d in DIMENSIONS},
        }
        for t in sampled
        for a in range(3)
    ]
    t0 = time.perf_counter()
    stream_annotations_import(stream=stream, labels=labels, created_by=researcher)
    _analyze()
    print(
        f"Built: {total:,} traces ({fill:.0f} s), {len(labels):,} labels ({time.perf_counter() - t0:.0f} s)"
    )


def _ms(fn, repeat: int, before=None) -> float:
    out = []
    for _ in range(repeat):
        if before is not None:
            before()
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return statistics.median(out)


def _mark_changed(stream, spans) -> None:
    """What a backfill leaves for the worker: these windows' data changed since they were computed."""
    from annotator.models import StreamChange

    StreamChange.objects.bulk_create([StreamChange(stream=stream, start=a, end=b) for a, b in spans])


def main() -> None:  # noqa: PLR0915 (one bench, read top to bottom)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="postgres://postgres@127.0.0.1:5432/bench_streams")
    parser.add_argument("--traces", type=int, default=1_000_000)
    parser.add_argument("--labels", type=int, default=20_000)
    parser.add_argument("--backfill", type=int, default=6_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--reuse", action="store_true")
    args = parser.parse_args()
    if not args.reuse:
        _fresh_postgres(args.url)
    django_on(args.url, STREAM_ALERT_WEBHOOK_URL="")
    from django.contrib.auth import get_user_model
    from django.test import Client

    from annotator.models import Annotation, Stream, StreamAlert, StreamWindowStat, Trace
    from annotator.rating.services.annotations import annotation_update
    from annotator.services.api_tokens import api_token_create
    from annotator.streams import selectors
    from annotator.streams.services import alerts as alerts_service
    from annotator.streams.services import series as series_service
    from annotator.streams.services.ingest import traces_ingest

    researcher, _ = get_user_model().objects.get_or_create(username="bench-researcher", is_staff=True)
    if not Stream.objects.filter(name=NAME).exists():
        build(args.traces, args.labels, researcher)
    stream = Stream.objects.select_related("batch").get(name=NAME)
    key = api_token_create(user=researcher, name="bench", days=1)[1]
    n_traces = Trace.objects.filter(stream=stream).count()
    # The statistics stack's imports are paid once per process, not per read.
    import annotator.streams.series  # noqa: F401
    from hcs.calibration.alt_test import alt_test  # noqa: F401
    from hcs.ppi import ppi_mean  # noqa: F401

    # 1. The worker's refresh.
    rows = []
    StreamWindowStat.objects.filter(stream=stream).delete()
    t = time.perf_counter()
    series_service.series_refresh_all(stream_id=stream.pk)
    rows.append(("series_refresh_all, every window computed (cold)", (time.perf_counter() - t) * 1000))
    rows.append(
        (
            "series_refresh_all, nothing stale (the alerts, mostly)",
            _ms(lambda: series_service.series_refresh_all(stream_id=stream.pk), args.repeat),
        )
    )
    bounds = series_service._window_bounds(stream)
    rows.append(
        (
            "alerts_refresh (reads + detectors + record)",
            _ms(lambda: alerts_service.alerts_refresh(stream=stream, bounds=bounds), args.repeat),
        )
    )
    rows.append(
        (
            f"alert_data once per dimension ({len(DIMENSIONS)} calls)",
            _ms(lambda: [selectors.alert_data(stream, d, bounds) for d in DIMENSIONS], args.repeat),
        )
    )
    if hasattr(selectors, "alerts_data"):
        rows.append(
            (
                "alerts_data, all dimensions in one read",
                _ms(lambda: selectors.alerts_data(stream, DIMENSIONS, bounds), args.repeat),
            )
        )
    n_alerts = StreamAlert.objects.filter(stream=stream).count()
    print(
        f"\nThe worker's refresh: {n_traces:,} traces, {len(bounds)} daily windows, 1 judge × "
        f"{len(DIMENSIONS)} dimensions, {n_alerts} alerts stored (median of {args.repeat})\n"
    )
    print("| step | median ms |")
    print("|---|---:|")
    for what, ms in rows:
        print(f"| {what} | {ms:.0f} |")

    # 2. Reads.
    client = Client(headers={"Authorization": f"Bearer {key}"})
    page = Client()
    page.force_login(researcher)
    api_url = f"/api/v1/streams/{NAME}/calibration?judge=gpt-judge&dimension=coherence"
    page_url = f"/streams/{NAME}/?judge=gpt-judge&dimension=coherence"

    def get(url):
        def call():
            response = (client if url == api_url else page).get(url)
            assert response.status_code == 200, response.content[:300]
            return response

        return call

    get(api_url)()
    reads = [
        ("API, warm", _ms(get(api_url), args.repeat)),
        ("page, warm", _ms(get(page_url), args.repeat)),
    ]
    backfill = traces(0, args.backfill, args.backfill, prefix="late")
    t = time.perf_counter()
    for first in range(0, len(backfill), 1000):
        traces_ingest(stream=stream, traces=backfill[first : first + 1000])
    ingest_s = time.perf_counter() - t
    # Each repetition: every window changed since it was computed, as right after the backfill.
    everything = lambda: _mark_changed(stream, bounds)  # noqa: E731
    reads.append(
        (
            f"API after a backfill touching all {len(bounds)} windows",
            _ms(get(api_url), args.repeat, everything),
        )
    )
    stale = sum(1 for w in get(api_url)().json()["windows"] if w.get("stale"))
    reads.append(("page after a backfill touching every window", _ms(get(page_url), args.repeat, everything)))
    series_service.series_refresh_all(stream_id=stream.pk)
    for k in (1, 2, 3, 4, 6, 8):
        last_k = lambda k=k: _mark_changed(stream, bounds[-k:])  # noqa: E731
        reads.append((f"API with {k} stale window(s)", _ms(get(api_url), args.repeat, last_k)))
    # One label edited as on the rating page: its window changed, and the stream's labels with it (every
    # other window's fingerprint is checked). The windows left stale above are refreshed first.
    series_service.series_refresh_all(stream_id=stream.pk)
    annotation = Annotation.objects.filter(item__batch=stream.batch).order_by("-pk").first()
    edits = iter(range(10**6))

    def edit():
        n = next(edits)  # each edit gives other scores than the one before
        scores = {d: 1 + (n + i) % 5 for i, d in enumerate(DIMENSIONS)}
        annotation_update(annotation=annotation, changed_by=annotation.annotator, scores=scores)

    reads.append(("API after one label edited (one window changed)", _ms(get(api_url), args.repeat, edit)))
    params = inspect.signature(series_service.series_refresh).parameters
    if "compute_at_most" in params:
        for k in (1, 2, 4, 8, 16, len(bounds)):
            spans = bounds[-k:]
            reads.append(
                (
                    f"series_refresh computing {k} stale window(s) in-process",
                    _ms(
                        lambda: series_service.series_refresh(
                            stream=stream, judge="gpt-judge", dimension="coherence", compute_at_most=None
                        ),
                        args.repeat,
                        lambda spans=spans: _mark_changed(stream, spans),
                    ),
                )
            )
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    print(
        f"\nReads: {args.backfill:,} backfilled traces ingested in {ingest_s:.1f} s; the API's first read after "
        f"it marked {stale} windows stale (load average {load} on {os.cpu_count()} CPUs; median of {args.repeat})\n"
    )
    print("| read | median ms |")
    print("|---|---:|")
    for what, ms in reads:
        print(f"| {what} | {ms:.0f} |")


if __name__ == "__main__":
    main()
