"""Exact-k blind assignment: leases, expiry, skips, release, one system per prompt."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotator.models import Assignment, Item
from annotator.rating.services import assignment as assignment_service
from annotator.rating.services.annotations import annotation_submit
from annotator.rating.services.assignment import (
    AssignmentError,
    assignment_expire_overdue,
    assignment_release,
    assignment_skip,
    item_next_for_annotator,
)
from tests.factories import make_batch, make_user

pytestmark = pytest.mark.django_db

GOOD = {"coherence": 4, "relevance": 4, "instruction_following": 4, "safety_compliance": 4, "fluency": 4}


def submit(item, user, **kwargs):
    return annotation_submit(item=item, annotator=user, scores=GOOD, constraints_met=[True, True], **kwargs)


def test_lease_prefers_the_item_closest_to_completion():
    batch = make_batch(n_items=6)
    items = list(batch.items.all())
    Item.objects.filter(pk=items[4].pk).update(n_annotations=2)
    Item.objects.filter(pk=items[2].pk).update(n_annotations=1)
    user = make_user("ann")
    assert item_next_for_annotator(batch=batch, annotator=user).item == items[4]


def test_ties_are_broken_at_random():
    batch = make_batch(n_items=8)
    first_items = set()
    for i in range(12):
        user = make_user(f"u{i}")
        assignment = item_next_for_annotator(batch=batch, annotator=user)
        first_items.add(assignment.item_id)
        assignment_skip(item=assignment.item, annotator=user, reason="test")  # frees the slot again
    assert len(first_items) > 1


def test_live_lease_is_resumed_not_duplicated():
    batch = make_batch(n_items=3)
    user = make_user("ann")
    first = item_next_for_annotator(batch=batch, annotator=user)
    again = item_next_for_annotator(batch=batch, annotator=user)
    assert again.pk == first.pk
    assert Assignment.objects.count() == 1
    assert Item.objects.get(pk=first.item_id).n_leased == 1


def test_an_item_is_leased_to_at_most_k_annotators_and_never_twice_to_one():
    batch = make_batch(n_items=1, k=3)
    users = [make_user(f"u{i}") for i in range(4)]
    leases = [item_next_for_annotator(batch=batch, annotator=u) for u in users[:3]]
    assert all(a is not None for a in leases)
    assert item_next_for_annotator(batch=batch, annotator=users[3]) is None
    submit(leases[0].item, users[0])
    # The one who submitted is never offered it again, even with free slots elsewhere.
    assert item_next_for_annotator(batch=batch, annotator=users[0]) is None
    item = Item.objects.get()
    assert (item.n_annotations, item.n_leased) == (1, 2)


def test_expired_lease_frees_the_slot():
    batch = make_batch(n_items=1, k=3)
    users = [make_user(f"u{i}") for i in range(4)]
    past = timezone.now() - timedelta(hours=2)
    for u in users[:3]:
        item_next_for_annotator(batch=batch, annotator=u, now=past)
    assert item_next_for_annotator(batch=batch, annotator=users[3]) is not None
    assert Assignment.objects.filter(state=Assignment.State.EXPIRED).count() == 3
    assert Item.objects.get().n_leased == 1


def test_late_submit_is_kept_while_a_slot_is_free_and_refused_once_full():
    from annotator.rating.services.annotations import SubmissionRefused

    batch = make_batch(n_items=1, k=3)
    late, slow, *others = [make_user(f"u{i}") for i in range(4)]
    past = timezone.now() - timedelta(hours=2)
    lease = item_next_for_annotator(batch=batch, annotator=late, now=past)
    slow_lease = item_next_for_annotator(batch=batch, annotator=slow, now=past)
    assert assignment_expire_overdue() == 2
    result = submit(lease.item, late)  # slots are free: accepted
    assert result.created
    assert result.annotation.started_at == lease.leased_at
    for u in others:
        submit(item_next_for_annotator(batch=batch, annotator=u).item, u)
    with pytest.raises(SubmissionRefused, match="ran out"):
        submit(slow_lease.item, slow)
    item = Item.objects.get()
    assert (item.n_annotations, item.n_leased) == (3, 0)


def test_skip_needs_a_reason_frees_the_slot_and_is_final():
    batch = make_batch(n_items=1, k=3)
    user = make_user("ann")
    lease = item_next_for_annotator(batch=batch, annotator=user)
    with pytest.raises(AssignmentError, match="why"):
        assignment_skip(item=lease.item, annotator=user, reason="   ")
    assignment_skip(item=lease.item, annotator=user, reason="I do not know this city")
    lease.refresh_from_db()
    assert (lease.state, lease.skip_reason) == (Assignment.State.SKIPPED, "I do not know this city")
    assert Item.objects.get().n_leased == 0
    assert item_next_for_annotator(batch=batch, annotator=user) is None


def test_admin_release_frees_the_slot():
    batch = make_batch(n_items=1, k=3)
    lease = item_next_for_annotator(batch=batch, annotator=make_user("ann"))
    assignment_release(assignment_id=lease.pk, batch=batch)
    assert Item.objects.get().n_leased == 0
    with pytest.raises(AssignmentError, match="not leased"):
        assignment_release(assignment_id=lease.pk, batch=batch)
    other = make_batch("other", n_items=1)
    with pytest.raises(AssignmentError, match="does not exist"):
        assignment_release(assignment_id=lease.pk, batch=other)


def test_one_system_per_prompt_gives_each_annotator_one_output_per_prompt():
    batch = make_batch(n_items=6, systems=("a", "b", "c"))  # prompts p0 and p1, three systems each
    batch.one_system_per_prompt = True
    batch.save()
    user = make_user("ann")
    prompts = []
    while (lease := item_next_for_annotator(batch=batch, annotator=user)) is not None:
        prompts.append(lease.item.prompt_id)
        submit(lease.item, user)
    assert sorted(prompts) == ["p0", "p1"]


def test_without_the_option_an_annotator_may_rate_every_system():
    batch = make_batch(n_items=6, systems=("a", "b", "c"))
    user = make_user("ann")
    n = 0
    while (lease := item_next_for_annotator(batch=batch, annotator=user)) is not None:
        submit(lease.item, user)
        n += 1
    assert n == 6


@pytest.mark.parametrize("one_system", [False, True])
def test_queries_per_lease_do_not_grow_with_the_batch(one_system):
    counts = []
    for n_items in (10, 300):
        batch = make_batch(f"b{n_items}", n_items=n_items, systems=("a", "b"))
        batch.one_system_per_prompt = one_system
        batch.save()
        user = make_user(f"u{n_items}")
        assignment_service._last_sweep["at"] = None  # count the periodic expiry sweep too
        with CaptureQueriesContext(connection) as ctx:
            lease = item_next_for_annotator(batch=batch, annotator=user)
            submit(lease.item, user)
        # Savepoints only appear because the test runs inside a transaction.
        counts.append(sum(1 for q in ctx.captured_queries if "SAVEPOINT" not in q["sql"]))
    assert counts[0] == counts[1]
    # Lease: user-row lock, standing, live lease, expiry sweep, the lease statement. Submit (ORM):
    # user-row lock, assignment lock, its update, annotation, scores, item counters.
    assert counts[0] <= 11


def test_a_lease_is_resumed_until_it_expires_and_not_after():
    batch = make_batch(n_items=3)
    user = make_user("ann")
    start = timezone.now() - timedelta(minutes=29, seconds=50)
    lease = item_next_for_annotator(batch=batch, annotator=user, now=start)
    assert item_next_for_annotator(batch=batch, annotator=user).pk == lease.pk  # 10 s left
    later = start + timedelta(minutes=30, seconds=1)
    assignment_service._last_sweep["at"] = None  # the expiry sweep is due (it runs at most every 20 s)
    fresh = item_next_for_annotator(batch=batch, annotator=user, now=later)
    assert fresh.pk != lease.pk and fresh.item_id != lease.item_id
    assert Assignment.objects.get(pk=lease.pk).state == Assignment.State.EXPIRED
    done = submit(fresh.item, user, now=later + timedelta(seconds=42))
    assert done.annotation.seconds_on_item == pytest.approx(42)
