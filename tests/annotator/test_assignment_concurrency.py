"""16 annotators race over 200 items with k=3: every item ends with exactly 3 annotations.

Runs on the database the suite runs on: PostgreSQL (row locks, SKIP LOCKED) when
DATABASE_URL names it, SQLite (serialised IMMEDIATE write transactions) otherwise.
"""

import threading
import time
from collections import Counter

import pytest
from django.db import connections

from annotator.models import Annotation, Assignment, Item, Score
from annotator.services.annotations import annotation_submit
from annotator.services.assignment import item_next_for_annotator
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
                result = annotation_submit(item=lease.item, annotator=user, scores=SCORES, constraints_met=[True, True])
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
