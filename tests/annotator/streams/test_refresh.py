"""The worker's refresh and the reads around it: an alert is recorded once even when two refreshes find it
at the same time, labels given on the rating page queue the refresh, and a read after a large backfill
serves the stored windows marked stale instead of computing them all."""

from __future__ import annotations

import datetime as dt
import threading
import time

import pytest
from django.db import connection, transaction
from django.test import Client
from django.urls import reverse

from annotator.models import Annotation, Job, StreamAlert, StreamChange, StreamWindowStat, Trace
from annotator.rating import hooks
from annotator.streams import hooks as stream_hooks
from annotator.streams import series as stream_series
from annotator.streams.services import alerts as alerts_service
from annotator.streams.services import refresh as refresh_service
from annotator.streams.services import series as series_service
from annotator.streams.services.alerts import alerts_record
from annotator.streams.services.series import series_refresh, series_refresh_all
from tests.annotator.streams.conftest import trace
from tests.annotator.study_support import RATING
from tests.factories import make_batch, make_user

START = dt.datetime(2026, 3, 2, tzinfo=dt.UTC)


@pytest.fixture(autouse=True)
def _quick(monkeypatch, settings):
    # The intervals are not under test here: fewer bootstrap resamples keep the refreshes quick.
    monkeypatch.setattr(stream_series, "BOOTSTRAP", {"n_boot": 50, "n_resamples": 50})
    settings.STREAM_ALERT_WEBHOOK_URL = "http://127.0.0.1:9/hook"
    settings.STREAM_SERIES_REFRESH_DELAY_S = 0


def _found(kind: str = "judge_drift") -> dict:
    return {"start": START, "end": START + dt.timedelta(days=1), "kind": kind, "judge": "j1", "detail": {}}


def _record(stream) -> list[StreamAlert]:
    return alerts_record(stream=stream, judge="j1", dimension="coherence", alerts=[_found()])


@pytest.mark.django_db
def test_a_change_recorded_between_the_check_and_the_insert_is_not_raised_nor_sent_again(
    stream, monkeypatch, django_capture_on_commit_callbacks
):
    real = StreamAlert.objects

    class Racing:
        """The other refresh stores the same change right after this one looked for it."""

        looked = 0

        def filter(self, **key):
            Racing.looked += 1
            if Racing.looked == 1:
                real.create(**key, detail={}, window_end=START + dt.timedelta(days=1))
                return real.none()
            return real.filter(**key)

        def create(self, **fields):
            return real.create(**fields)

    monkeypatch.setattr(StreamAlert, "objects", Racing())
    with django_capture_on_commit_callbacks(execute=False) as queued:
        assert _record(stream) == []
    monkeypatch.undo()
    assert Racing.looked == 2  # the insert failed on ``stream_alert_once`` and the row was found
    assert StreamAlert.objects.count() == 1
    assert not Job.objects.filter(kind=Job.STREAM_ALERT).exists() and queued == []
    # The same change found again by a later refresh: nothing new either.
    assert _record(stream) == [] and StreamAlert.objects.count() == 1


@pytest.mark.django_db
def test_an_integrity_error_that_is_not_the_alert_being_stored_is_raised(stream, monkeypatch):
    from django.db import IntegrityError

    def broken(alert):
        raise IntegrityError("something else")

    monkeypatch.setattr(alerts_service, "alert_notify", broken)
    with pytest.raises(IntegrityError):
        _record(stream)
    assert StreamAlert.objects.count() == 0  # the alert and its job commit together, or neither


@pytest.mark.django_db(transaction=True)
def test_two_refreshes_recording_the_same_change_at_once_store_and_send_it_once(stream, monkeypatch):
    if connection.vendor != "postgresql":
        pytest.skip("row locks between two connections: PostgreSQL")
    from annotator.services import jobs

    # The delivery jobs are counted, not run (the test settings' task backend would run them at once).
    monkeypatch.setattr(jobs, "job_enqueue", lambda job: None)
    inserted, release = threading.Event(), threading.Event()
    made, errors, waited = {}, [], {}

    def first():
        try:
            with transaction.atomic():  # holds its new row uncommitted until released
                made["first"] = _record(stream)
                inserted.set()
                release.wait(10)
        except Exception as exc:  # noqa: BLE001 (reported by the test)
            errors.append(exc)
        finally:
            connection.close()

    def second():
        try:
            t = time.perf_counter()
            made["second"] = _record(stream)  # its insert waits on the first's uncommitted row
            waited["s"] = time.perf_counter() - t
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            connection.close()

    one = threading.Thread(target=first)
    one.start()
    assert inserted.wait(10)
    two = threading.Thread(target=second)
    two.start()
    time.sleep(0.5)
    release.set()
    one.join(10)
    two.join(10)
    assert errors == []
    assert waited["s"] >= 0.4  # it did wait for the first transaction: the race was run
    assert len(made["first"]) == 1 and made["second"] == []
    assert StreamAlert.objects.count() == 1
    assert list(Job.objects.filter(kind=Job.STREAM_ALERT).values_list("params", flat=True)) == [
        {"alert_id": made["first"][0].pk}
    ]


def _n_human(stream, day: int) -> int:
    """The stored window's count, read without a read of the series (which could compute it itself)."""
    stat = StreamWindowStat.objects.get(stream=stream, judge="j1", dimension="coherence", start__day=day)
    return stat.stats["n_human"]


@pytest.fixture
def queued(monkeypatch):
    """The refreshes queued by the streams' rating hook; the test settings' task backend runs each at once."""
    calls = []
    real = stream_hooks.series_refresh_queue

    def queue(*, stream_id):
        calls.append(stream_id)
        return real(stream_id=stream_id)

    monkeypatch.setattr(stream_hooks, "series_refresh_queue", queue)
    return calls


@pytest.mark.django_db
def test_a_rating_given_on_the_rating_page_queues_the_refresh_of_its_window(
    api_as, stream, queued, django_capture_on_commit_callbacks
):
    client = api_as("researcher")
    client.post("/streams/prod-chat/traces", {"traces": [trace(i, day=1 + i % 3) for i in range(30)]})
    series_refresh_all(stream_id=stream.pk)
    rater = Client()
    rater.force_login(make_user("stream-rater", role="annotator"))
    item = rater.get(reverse("annotate_next", args=[stream.batch.pk])).context["item"]
    day = Trace.objects.get(item=item).timestamp.day
    before = _n_human(stream, day)
    changes = StreamChange.objects.count()
    with django_capture_on_commit_callbacks(execute=True):
        response = rater.post(reverse("annotate_submit", args=[item.pk]), RATING)
    assert response.status_code == 302 and Annotation.objects.filter(item=item).count() == 1
    change = StreamChange.objects.order_by("-pk").first()
    assert StreamChange.objects.count() == changes + 1 and change.start.day == day
    assert queued == [stream.pk]
    assert _n_human(stream, day) == before + 1  # the worker's refresh stored the window again
    # An edit of that rating on the rating page marks the window and queues the refresh again.
    annotation = Annotation.objects.get(item=item)
    with django_capture_on_commit_callbacks(execute=True):
        edited = rater.post(
            reverse("annotation_edit", args=[annotation.pk]), {**RATING, "score_coherence": "1"}
        )
    assert edited.status_code == 302
    assert StreamChange.objects.count() == changes + 2 and queued == [stream.pk, stream.pk]


@pytest.mark.django_db
def test_labels_imported_offline_for_a_stream_queue_its_refresh(
    api_as, stream, queued, django_capture_on_commit_callbacks
):
    from annotator.uploads.services.annotation_imports import annotations_import_file

    client = api_as("researcher")
    sampled = client.post("/streams/prod-chat/traces", {"traces": [trace(i) for i in range(10)]}).json()[
        "sampled"
    ]
    series_refresh_all(stream_id=stream.pk)
    before = StreamChange.objects.count()
    line = f'{{"item_id": "{sampled[0]}", "annotator": "offline-1", "coherence": 4}}'
    with django_capture_on_commit_callbacks(execute=True):
        annotations_import_file(data=line.encode(), filename="labels.jsonl", batch_name=stream.batch.name)
    assert StreamChange.objects.count() == before + 1 and queued == [stream.pk]
    assert _n_human(stream, 1) == 1


@pytest.mark.django_db
def test_a_batch_that_is_no_streams_costs_the_hook_no_query(django_assert_num_queries):
    batch = make_batch("plain", n_items=1)
    item_ids = [batch.items.first().pk]
    with django_assert_num_queries(0):
        hooks.labels_changed(batch=batch, item_ids=item_ids)


@pytest.mark.django_db
def test_a_read_after_a_large_backfill_serves_the_stored_windows_marked_stale(
    api_as, stream, monkeypatch, django_capture_on_commit_callbacks
):
    client = api_as("researcher")
    client.post("/streams/prod-chat/traces", {"traces": [trace(i, day=1 + i % 6) for i in range(60)]})
    series_refresh_all(stream_id=stream.pk)
    stored = client.get("/streams/prod-chat/calibration").json()["windows"]
    assert len(stored) == 6 and not any(w["stale"] for w in stored)
    assert series_service.READ_COMPUTES_AT_MOST < 7
    # A backfill into every window, and one new day; the worker has not run yet (nor been asked to).
    backfill = [trace(100 + i, day=1 + i % 7, hour=3) for i in range(35)]
    with django_capture_on_commit_callbacks(execute=False):
        client.post("/streams/prod-chat/traces", {"traces": backfill})
    asked = []
    monkeypatch.setattr(refresh_service, "series_refresh_queue", lambda *, stream_id: asked.append(stream_id))
    read = client.get("/streams/prod-chat/calibration").json()["windows"]
    assert [w["stale"] for w in read] == [True] * 7
    # The stored numbers, as they were, and the new day's unknown until the worker computes it.
    assert [w["n_traces"] for w in read[:6]] == [w["n_traces"] for w in stored]
    # The new day was never computed: its counts are read at once, its statistics wait for the worker.
    assert (read[6]["n_traces"], read[6]["n_human"], read[6]["n_judge"]) == (5, 0, 5)
    assert read[6]["n_paired"] is None and read[6]["agreement"]["estimate"] is None
    assert asked == [stream.pk]  # the read made sure the worker's refresh is queued
    page = Client()
    page.force_login(make_user("stale-reader", role="researcher"))
    response = page.get(reverse("stream_page", args=["prod-chat"]))
    assert response.status_code == 200 and response.context["series"].stale == 7
    text = response.content.decode()
    assert "7 windows are being recomputed by the worker" in text
    assert text.count('title="being recomputed"') == 7 and ">None<" not in text
    series_refresh_all(stream_id=stream.pk)
    fresh = client.get("/streams/prod-chat/calibration").json()["windows"]
    assert not any(w["stale"] for w in fresh)
    assert [w["n_traces"] for w in fresh] == [15, 15, 15, 15, 15, 15, 5]


@pytest.mark.django_db
def test_a_read_with_few_stale_windows_computes_them(api_as, stream):
    client = api_as("researcher")
    client.post("/streams/prod-chat/traces", {"traces": [trace(i, day=1 + i % 6) for i in range(60)]})
    series_refresh_all(stream_id=stream.pk)
    client.post("/streams/prod-chat/traces", {"traces": [trace(200, day=2, hour=4)]})
    series = series_refresh(stream=stream, judge="j1", dimension="coherence")
    assert series.recomputed == 1 and series.stale == 0
    assert [w["n_traces"] for w in series.windows] == [10, 11, 10, 10, 10, 10]


@pytest.mark.django_db
def test_a_new_count_stream_shows_its_counts_before_the_worker_runs(api_as, monkeypatch):
    client = api_as("researcher")
    made = client.post(
        "/streams", {"name": "counted", "human_rate": 0.5, "k": 3, "window": 3, "judges": ["j1"]}
    )
    assert made.status_code == 201, made.content
    monkeypatch.setattr(refresh_service, "series_refresh_queue", lambda *, stream_id: None)
    client.post("/streams/counted/traces", {"traces": [trace(i, hour=i % 24) for i in range(40)]})
    sampled = list(
        Trace.objects.filter(stream__name="counted", sampled=True).values_list("trace_id", flat=True)
    )
    labels = [{"trace_id": t, "annotator": a, "scores": {"coherence": 3}} for t in sampled[:5] for a in "abc"]
    assert client.post("/streams/counted/annotations", labels).status_code == 201
    first = client.get("/streams/counted/calibration").json()["windows"]
    assert len(first) > series_service.READ_COMPUTES_AT_MOST and all(w["stale"] for w in first)
    counts = [(w["n_traces"], w["n_human"], w["n_judge"]) for w in first]
    assert sum(n for n, _, _ in counts) == 40 and sum(h for _, h, _ in counts) == 5
    # The same counts the worker's computation stores.
    from annotator.models import Stream

    series_refresh_all(stream_id=Stream.objects.get(name="counted").pk)
    done = client.get("/streams/counted/calibration").json()["windows"]
    assert [(w["n_traces"], w["n_human"], w["n_judge"]) for w in done] == counts


@pytest.mark.django_db
def test_windows_stored_by_older_formulas_are_computed_again(api_as, stream, monkeypatch):
    client = api_as("researcher")
    client.post("/streams/prod-chat/traces", {"traces": [trace(i, day=1 + i % 2) for i in range(20)]})
    series_refresh_all(stream_id=stream.pk)
    assert series_refresh(stream=stream, judge="j1", dimension="coherence").recomputed == 0
    monkeypatch.setattr(series_service, "STATS_VERSION", series_service.STATS_VERSION + 1)
    again = series_refresh(stream=stream, judge="j1", dimension="coherence")
    assert again.recomputed == 2 and again.stale == 0
    assert series_refresh(stream=stream, judge="j1", dimension="coherence").recomputed == 0
