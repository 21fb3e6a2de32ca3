"""The rating page's batch progress is read at most once per ANNOTATOR_PROGRESS_CACHE_SECONDS per
process and batch; the annotator's own counts are always fresh."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext, override_settings

from annotator.selectors import rating_progress as progress_module
from annotator.selectors.rating_progress import rating_progress
from annotator.services.assignment import item_next_for_annotator
from tests.factories import make_annotation, make_batch, make_user

pytestmark = pytest.mark.django_db


# The batch part of the progress read: the items grouped by their two counters alone (PostgreSQL's
# hand-written statement or the ORM's, on SQLite).
BATCH_PART = re.compile(r'FROM "annotator_item" WHERE ("annotator_item"\.)?"?batch_id"? = \S+ GROUP BY')


@pytest.fixture(autouse=True)
def _fresh_cache():
    progress_module._batch_parts.clear()
    yield
    progress_module._batch_parts.clear()


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
