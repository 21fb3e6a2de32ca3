"""16 annotators race over 200 items with k=3: every item ends with exactly 3 annotations.

Runs on the database the suite runs on: PostgreSQL (row locks, SKIP LOCKED) when
DATABASE_URL names it, SQLite (serialised IMMEDIATE write transactions) otherwise.
"""

import threading
import time
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connections

from annotator.models import Annotation, Assignment, Item, Score
from annotator.rating.services.annotations import annotation_submit
from annotator.rating.services.assignment import item_next_for_annotator
from tests.factories import make_batch, make_user

N_THREADS, N_ITEMS, K = 16, 200, 3
TIME_LIMIT_S = 240
SCORES = {"coherence": 4, "relevance": 3, "instruction_following": 4, "safety_compliance": 5, "fluency": 4}


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_sixteen_annotators_race_to_exactly_k():
    batch = make_batch("race", n_items=N_ITEMS, k=K)
    users = [make_user(f"racer{i}") for i in range(N_THREADS)]
    submitted: dict[int, list[int]] = {u.pk: [] for u in users}
    errors: list[BaseException] = []
    deadline = time.monotonic() + TIME_LIMIT_S
    start = threading.Barrier(N_THREADS)

    def annotate(user):
        try:
            start.wait()
            while time.monotonic() < deadline:
                lease = item_next_for_annotator(batch=batch, annotator=user)
                if lease is None:
                    return
                result = annotation_submit(
                    item=lease.item, annotator=user, scores=SCORES, constraints_met=[True, True]
                )
                assert result.created
                submitted[user.pk].append(lease.item_id)
        except BaseException as exc:  # reported below, with the thread's user
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=annotate, args=(u,)) for u in users]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=TIME_LIMIT_S + 30)
    assert not any(t.is_alive() for t in threads), "threads still running after the time limit"
    assert not errors, errors[:3]
    assert time.monotonic() < deadline, "ran out of time before the batch was finished"

    per_item = Counter(Annotation.objects.filter(item__batch=batch).values_list("item_id", flat=True))
    assert len(per_item) == N_ITEMS
    assert set(per_item.values()) == {K}
    pairs = set(Annotation.objects.values_list("item_id", "annotator_id"))
    assert len(pairs) == N_ITEMS * K  # k distinct annotators per item
    # No submission lost: everything a thread was told it saved is in the database.
    told = {(item_id, user_pk) for user_pk, items in submitted.items() for item_id in items}
    assert told == pairs
    assert Score.objects.filter(item__batch=batch).count() == N_ITEMS * K * len(SCORES)
    assert set(Item.objects.filter(batch=batch).values_list("n_annotations", "n_leased")) == {(K, 0)}
    assert not Assignment.objects.filter(state=Assignment.State.LEASED).exists()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_leases_expiring_mid_race_never_overfill_an_item(monkeypatch):
    """Leases last 150 ms and are swept on every request; a third of the submissions arrive
    after their lease ran out. Late ones are kept only while a slot is free."""
    import random

    from annotator.rating.services import assignment as service
    from annotator.rating.services.annotations import SubmissionRefused

    monkeypatch.setattr(service, "lease_duration", lambda: timedelta(milliseconds=150))
    monkeypatch.setattr(service, "SWEEP_EVERY", timedelta(0))
    batch = make_batch("churn", n_items=40, k=K)
    users = [make_user(f"churn{i}") for i in range(8)]
    kept: list[tuple[int, int]] = []
    refused: list[int] = []
    errors: list[BaseException] = []
    deadline = time.monotonic() + TIME_LIMIT_S
    lock = threading.Lock()

    def annotate(user, seed):
        rng = random.Random(seed)
        try:
            while time.monotonic() < deadline:
                lease = item_next_for_annotator(batch=batch, annotator=user)
                if lease is None:
                    return
                if rng.random() < 1 / 3:
                    time.sleep(0.2)  # past the lease
                try:
                    annotation_submit(
                        item=lease.item, annotator=user, scores=SCORES, constraints_met=[True, True]
                    )
                except SubmissionRefused:
                    with lock:
                        refused.append(lease.item_id)
                else:
                    with lock:
                        kept.append((lease.item_id, user.pk))
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=annotate, args=(u, i)) for i, u in enumerate(users)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=TIME_LIMIT_S + 30)
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors[:3]

    per_item = Counter(Annotation.objects.filter(item__batch=batch).values_list("item_id", flat=True))
    assert max(per_item.values()) <= K
    assert set(Annotation.objects.values_list("item_id", "annotator_id")) == set(kept)
    assert len(kept) == len(set(kept))
    for item in Item.objects.filter(batch=batch):
        assert item.n_annotations == per_item.get(item.pk, 0)
        assert item.n_leased == Assignment.objects.filter(item=item, state=Assignment.State.LEASED).count()
    # Most items still reach k; a refusal only costs the item one of its possible annotators.
    assert sum(1 for n in per_item.values() if n == K) >= 0.8 * 40
