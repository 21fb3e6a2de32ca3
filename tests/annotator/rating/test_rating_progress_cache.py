"""The rating page's batch progress, and the annotator's items by their counters, are read at most once
per ANNOTATOR_PROGRESS_CACHE_SECONDS per process (per batch, and per batch and annotator); the
annotator's own counts by state are always fresh."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext, override_settings

from annotator.rating.selectors import progress as progress_module
from annotator.rating.selectors.progress import rating_progress
from annotator.rating.services.assignment import item_next_for_annotator
from tests.factories import make_annotation, make_batch, make_user

pytestmark = pytest.mark.django_db


# The batch part of the progress read: the items grouped by their two counters alone (PostgreSQL's
# hand-written statement or the ORM's, on SQLite).
BATCH_PART = re.compile(r'FROM "annotator_item" WHERE ("annotator_item"\.)?"?batch_id"? = \S+ GROUP BY')
# The annotator's part that looks up each item they were given (a lateral lookup, or the ORM's join).
MINE_PART = re.compile(
    r'CROSS JOIN LATERAL|INNER JOIN "annotator_item" ON \("annotator_assignment"\."item_id"'
)


@pytest.fixture(autouse=True)
def _fresh_cache():
    progress_module._batch_parts.clear()
    progress_module._mine_parts.clear()
    yield
    progress_module._batch_parts.clear()
    progress_module._mine_parts.clear()


def _progress(batch, user):
    lease = item_next_for_annotator(batch=batch, annotator=user)
    return rating_progress(batch=batch, item=lease.item, annotator=user, lease=lease)


@override_settings(ANNOTATOR_PROGRESS_CACHE_SECONDS=60)
def test_batch_part_is_kept_for_its_lifetime_and_own_counts_stay_fresh(monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(progress_module, "monotonic", lambda: clock[0])
    batch = make_batch("cached progress", n_items=6, k=3)
    user = make_user("cache-ann")
    first = _progress(batch, user)
    assert (first.items_complete, first.items_total, first.mine_submitted) == (0, 6, 0)

    items = list(batch.items.order_by("position"))
    for person in [make_user(f"cache-other{i}") for i in range(3)]:  # another item completes
        make_annotation(items[5], person, {"coherence": 3})
    lease = item_next_for_annotator(batch=batch, annotator=user)
    make_annotation(lease.item, user, {"coherence": 4})  # and the annotator rates theirs
    lease.state = "submitted"
    lease.save()

    with CaptureQueriesContext(connection) as ctx:
        kept = rating_progress(batch=batch, item=lease.item, annotator=user, lease=lease)
    assert kept.mine_submitted == 1  # own work: read now
    assert (kept.items_complete, kept.items_total) == (0, 6)  # the batch: as read 0 s ago
    assert not [q for q in ctx.captured_queries if BATCH_PART.search(q["sql"])]

    clock[0] += 61
    fresh = rating_progress(batch=batch, item=lease.item, annotator=user, lease=lease)
    assert (fresh.items_complete, fresh.items_total, fresh.mine_submitted) == (1, 6, 1)


def test_zero_seconds_reads_the_batch_every_time():
    batch = make_batch("uncached progress", n_items=3, k=3)
    user = make_user("nocache-ann")
    _progress(batch, user)
    assert progress_module._batch_parts == {}


@override_settings(ANNOTATOR_PROGRESS_CACHE_SECONDS=60)
def test_near_the_end_the_batch_part_is_read_fresh(monkeypatch):
    # k = 3 and three items: little is left for the annotator, so a remembered batch part could
    # disagree with their own fresh counts by the item they took since; both are read now.
    monkeypatch.setattr(progress_module, "monotonic", lambda: 1000.0)
    batch = make_batch("small progress", n_items=3, k=3)
    user = make_user("small-ann")
    _progress(batch, user)
    assert progress_module._batch_parts  # remembered
    lease = item_next_for_annotator(batch=batch, annotator=user)
    with CaptureQueriesContext(connection) as ctx:
        rating_progress(batch=batch, item=lease.item, annotator=user, lease=lease)
    assert [q for q in ctx.captured_queries if BATCH_PART.search(q["sql"])]


@override_settings(ANNOTATOR_PROGRESS_CACHE_SECONDS=60)
def test_the_annotators_items_by_counters_are_kept_and_their_counts_stay_exact(monkeypatch):
    """The lookup of every item the annotator was given grows with their work: it is remembered like
    the batch part, while their position (counts by state) is read on every page, and "up to N more"
    stays an upper bound."""
    clock = [1000.0]
    monkeypatch.setattr(progress_module, "monotonic", lambda: clock[0])
    batch = make_batch("kept own part", n_items=12, k=3)
    user = make_user("kept-own")
    first = _progress(batch, user)
    assert (first.mine_submitted, first.left_for_me) == (0, 11)
    assert progress_module._mine_parts

    lease = item_next_for_annotator(batch=batch, annotator=user)
    make_annotation(lease.item, user, {"coherence": 4})
    lease.state = "submitted"
    lease.save()
    second_lease = item_next_for_annotator(batch=batch, annotator=user)
    with CaptureQueriesContext(connection) as ctx:
        kept = rating_progress(batch=batch, item=second_lease.item, annotator=user, lease=second_lease)
    assert not [q for q in ctx.captured_queries if MINE_PART.search(q["sql"])]
    assert kept.mine_submitted == 1 and kept.position == 2  # own counts: read now
    assert kept.left_for_me >= 12 - 2  # as read a moment ago: never fewer than are left

    clock[0] += 61
    with CaptureQueriesContext(connection) as ctx:
        fresh = rating_progress(batch=batch, item=second_lease.item, annotator=user, lease=second_lease)
    assert [q for q in ctx.captured_queries if MINE_PART.search(q["sql"])]
    assert (fresh.mine_submitted, fresh.left_for_me) == (1, 12 - 2)


def test_the_counts_are_exact_without_the_cache():
    batch = make_batch("exact own part", n_items=12, k=3)
    user = make_user("exact-own")
    for _ in range(3):
        lease = item_next_for_annotator(batch=batch, annotator=user)
        make_annotation(lease.item, user, {"coherence": 4})
        lease.state = "submitted"
        lease.save()
    lease = item_next_for_annotator(batch=batch, annotator=user)
    progress = rating_progress(batch=batch, item=lease.item, annotator=user, lease=lease)
    assert (progress.mine_submitted, progress.position, progress.left_for_me) == (3, 4, 12 - 4)
    assert progress_module._mine_parts == {}
