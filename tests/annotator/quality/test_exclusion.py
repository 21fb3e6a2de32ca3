"""Excluding an annotator: annotations kept, slots reopened, every item still reaches k valid
annotations, also when the exclusion races the annotators (SQLite and PostgreSQL)."""

import threading
import time
from collections import Counter

import pytest
from django.db import connections
from django.urls import reverse

from annotator.models import Annotation, AnnotatorStanding, Assignment, Item
from annotator.quality.services.exclusion import (
    ExclusionError,
    annotator_exclude,
    annotator_include,
)
from annotator.rating.services.annotations import SubmissionRefused, annotation_submit
from annotator.rating.services.assignment import item_next_for_annotator
from tests.factories import make_batch, make_user

SCORES = {"coherence": 4, "relevance": 3, "instruction_following": 4, "safety_compliance": 5, "fluency": 4}


def rate(batch, user):
    lease = item_next_for_annotator(batch=batch, annotator=user)
    assert lease is not None
    annotation_submit(item=lease.item, annotator=user, scores=SCORES)
    return lease.item


@pytest.mark.django_db
def test_exclusion_keeps_annotations_reopens_slots_and_releases_leases():
    batch = make_batch("excl", n_items=2, k=3, constraints=())
    a, b, c, d = (make_user(n) for n in "abcd")
    first = [rate(batch, u) for u in (a, b, c)]
    assert len({i.pk for i in first}) == 1  # closest to completion first: all three on one item
    lease = item_next_for_annotator(batch=batch, annotator=a)  # a now holds the second item
    assert item_next_for_annotator(batch=batch, annotator=d).item_id == lease.item_id

    annotator_exclude(batch=batch, annotator=a, reason="clicks at random")
    counts = dict(Item.objects.filter(batch=batch).values_list("pk", "n_annotations"))
    assert counts[first[0].pk] == 2  # a's annotation no longer counts
    assert Annotation.objects.filter(annotator=a).count() == 1  # but is kept
    assert Assignment.objects.get(pk=lease.pk).state == Assignment.State.RELEASED
    assert Item.objects.get(pk=lease.item_id).n_leased == 1  # only d's lease is left
    with pytest.raises(SubmissionRefused, match="no longer rating"):
        annotation_submit(item=lease.item, annotator=a, scores=SCORES)

    # The reopened slot goes to someone who has not seen the item.
    annotation_submit(item=Item.objects.get(pk=lease.item_id), annotator=d, scores=SCORES)
    assert rate(batch, d).pk == first[0].pk
    assert Item.objects.get(pk=first[0].pk).n_annotations == 3

    annotator_include(batch=batch, annotator=a)
    assert Item.objects.get(pk=first[0].pk).n_annotations == 4  # counted again: more than k is allowed
    assert not AnnotatorStanding.objects.get(batch=batch, annotator=a).excluded


@pytest.mark.django_db
def test_excluding_twice_moves_counts_once_and_a_reason_is_required():
    batch = make_batch("twice", n_items=1, k=3, constraints=())
    a = make_user("a")
    item = rate(batch, a)
    with pytest.raises(ExclusionError, match="Say why"):
        annotator_exclude(batch=batch, annotator=a, reason="  ")
    annotator_exclude(batch=batch, annotator=a, reason="one")
    annotator_exclude(batch=batch, annotator=a, reason="two")
    assert Item.objects.get(pk=item.pk).n_annotations == 0
    assert AnnotatorStanding.objects.get(batch=batch, annotator=a).exclusion_reason == "two"


@pytest.mark.django_db
def test_the_report_page_excludes_and_shows_both_agreements(client):
    batch = make_batch("page", n_items=3, k=3, constraints=())
    people = [make_user(f"p{i}") for i in range(4)]
    for _ in range(3):
        for u in people:
            lease = item_next_for_annotator(batch=batch, annotator=u)
            if lease:
                annotation_submit(item=lease.item, annotator=u, scores=SCORES)
    client.force_login(make_user("res", role="researcher"))
    url = reverse("annotator_exclude", args=[batch.pk, people[0].pk])
    assert client.post(url, {"reason": ""}).status_code == 302
    assert not AnnotatorStanding.objects.filter(excluded=True).exists()  # no reason: nothing happens
    client.post(url, {"reason": "<b>too fast</b>"})
    page = client.get(reverse("report_batch", args=[batch.pk])).content.decode()
    assert "Agreement with and without the excluded annotators" in page
    assert "&lt;b&gt;too fast&lt;/b&gt;" in page and "<b>too fast</b>" not in page
    assert reverse("annotator_include", args=[batch.pk, people[0].pk]) in page
    for sort, descending in (("-n", True), ("n", False)):
        response = client.get(reverse("report_batch", args=[batch.pk]) + f"?sort={sort}")
        counts = [row["s"].n_annotations for row in response.context["qc"]["rows"]]
        assert counts == sorted(counts, reverse=descending) and len(counts) == 4  # p0 is still listed
    assert client.get(reverse("report_batch", args=[batch.pk]) + "?sort=<script>").status_code == 200


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_exclusion_racing_annotators_still_gives_every_item_k_valid_annotations():
    n_items, k = 40, 3
    batch = make_batch("race-excl", n_items=n_items, k=k, constraints=())
    users = [make_user(f"r{i}") for i in range(8)]
    bad = users[0]
    errors, refused = [], []
    excluded = threading.Event()
    bad_is_rating = threading.Event()
    bad_has_lease = threading.Event()

    def annotate(user):
        try:
            if user != bad:
                # The others start once the annotator to exclude holds a lease: SQLite's busy wait is
                # not fair, and the others could otherwise take every slot before they get one.
                bad_has_lease.wait(timeout=60)
            for _ in range(n_items):
                lease = item_next_for_annotator(batch=batch, annotator=user)
                if user == bad and lease is not None:
                    bad_has_lease.set()
                if lease is None:
                    if user == bad and not excluded.is_set():
                        time.sleep(0.01)
                        continue
                    return
                try:
                    annotation_submit(item=lease.item, annotator=user, scores=SCORES)
                    if user == bad:
                        bad_is_rating.set()
                except SubmissionRefused:
                    refused.append(user.pk)
                    if user == bad:
                        return
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)
        finally:
            connections.close_all()

    def exclude_soon():
        try:
            bad_is_rating.wait(timeout=600)  # a loaded machine can take long to start a thread
            annotator_exclude(batch=batch, annotator=bad, reason="racing")
            excluded.set()
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=annotate, args=(u,)) for u in users] + [
        threading.Thread(target=exclude_soon)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors[:3]
    assert Annotation.objects.filter(annotator=bad).exists()  # the exclusion came while they were rating
    # Whoever is left keeps rating until nothing is free: finish the batch with the good annotators.
    for user in users[1:]:
        while (lease := item_next_for_annotator(batch=batch, annotator=user)) is not None:
            annotation_submit(item=lease.item, annotator=user, scores=SCORES)
    valid = Counter(
        Annotation.objects.filter(item__batch=batch).exclude(annotator=bad).values_list("item_id", flat=True)
    )
    state = {
        i.pk: (
            valid[i.pk],
            i.n_annotations,
            i.n_leased,
            list(Assignment.objects.filter(item=i).values_list("annotator__username", "state")),
        )
        for i in Item.objects.filter(batch=batch)
        if valid[i.pk] != k
    }
    assert sorted(valid.values()) == [k] * n_items, state
    counters = dict(Item.objects.filter(batch=batch).values_list("pk", "n_annotations"))
    assert counters == dict(valid)  # n_annotations counts exactly the valid annotations
    assert not Item.objects.filter(batch=batch, n_leased__gt=0).exists()


@pytest.mark.django_db
def test_kappa_without_says_why_it_is_missing_when_one_of_k_raters_is_excluded(client):
    """Fleiss' κ takes only items with k ratings: with one of three raters out, none is left."""
    batch = make_batch("three", n_items=2, k=3, constraints=())
    people = [make_user(f"r{i}") for i in range(3)]
    for _ in range(2):
        for u in people:
            annotation_submit(
                item=item_next_for_annotator(batch=batch, annotator=u).item,
                annotator=u,
                scores={**SCORES, "coherence": 2 + people.index(u)},
            )
    annotator_exclude(batch=batch, annotator=people[0], reason="too fast")
    client.force_login(make_user("res", role="researcher"))
    response = client.get(reverse("report_batch", args=[batch.pk]))
    coherence = next(d for d in response.context["qc"]["side_by_side"] if d["label"] == "Coherence")
    assert coherence["kept"].fleiss_kappa is None and coherence["all"].fleiss_kappa is not None
    reason = "needs k = 3 ratings on an item; without the excluded annotators no item has 3"
    assert coherence["kept_kappa_why"] == reason and coherence["all_kappa_why"] == ""
    assert f"({reason})" in response.content.decode()
