"""The queue offers Start only where an item is left for the annotator: a batch they have finished
says so, with no button that leads to "Nothing left", and keeps the way to their own work."""

import re

import pytest
from django.db.models import F
from django.urls import reverse
from django.utils import timezone

from annotator.models import Assignment, Item
from tests.factories import make_annotation, make_batch, make_user

pytestmark = pytest.mark.django_db

SCORES = {"coherence": 4, "relevance": 3, "instruction_following": 4, "safety_compliance": 5, "fluency": 4}


def rate(item, user):
    now = timezone.now()
    Assignment.objects.create(
        item=item,
        annotator=user,
        state=Assignment.State.SUBMITTED,
        leased_at=now,
        lease_expires_at=now,
        finished_at=now,
    )
    make_annotation(item, user, SCORES)


def row_of(page: str, batch) -> str:
    """The queue table's row of ``batch``."""
    [row] = [r for r in re.findall(r"<tr>.*?</tr>", page, re.S) if f"<strong>{batch.name}</strong>" in r]
    return row


@pytest.fixture
def me(client):
    user = make_user("ann")
    client.force_login(user)
    return user


def test_a_batch_every_item_of_which_is_complete_says_so_and_has_no_start(client, me):
    batch = make_batch("all-done", n_items=2)
    for item in batch.items.all():
        rate(item, me)
    Item.objects.filter(batch=batch).update(n_annotations=batch.k)  # the others rated them too
    row = row_of(client.get(reverse("annotate_queue")).content.decode(), batch)
    assert "Complete: nothing left for you" in row
    assert reverse("annotate_next", args=[batch.pk]) not in row and "Start" not in row
    assert reverse("annotate_mine", args=[batch.pk]) in row  # their own work is still one click away


def test_a_batch_whose_open_items_were_all_given_to_me_is_nothing_left(client, me):
    batch = make_batch("mine-done", n_items=2)
    for item in batch.items.all():
        rate(item, me)  # each item still waits for others' annotations
    row = row_of(client.get(reverse("annotate_queue")).content.decode(), batch)
    assert "Nothing left for you" in row and "Complete" not in row
    assert reverse("annotate_next", args=[batch.pk]) not in row
    assert reverse("annotate_mine", args=[batch.pk]) in row
    # What the queue says is what Start would have found.
    assert "Nothing left for you in" in client.get(reverse("annotate_next", args=[batch.pk])).content.decode()


def test_start_stays_while_an_item_is_left_even_one_held_by_someone_else(client, me):
    batch = make_batch("open", n_items=2)
    first, second = batch.items.order_by("position")
    rate(first, me)
    # Every open slot of the second item is on someone's lease: it may come free when a lease runs out.
    Item.objects.filter(pk=second.pk).update(n_leased=batch.k - F("n_annotations"))
    row = row_of(client.get(reverse("annotate_queue")).content.decode(), batch)
    assert f'href="{reverse("annotate_next", args=[batch.pk])}">Start</a>' in row
    assert "left for you" not in row


def test_an_item_on_my_screen_is_continue_not_nothing_left(client, me):
    batch = make_batch("on-screen", n_items=1)
    assert client.get(reverse("annotate_next", args=[batch.pk])).status_code == 200  # leases the only item
    row = row_of(client.get(reverse("annotate_queue")).content.decode(), batch)
    assert ">Continue</a>" in row and "left for you" not in row


def test_a_crowd_worker_with_nothing_left_is_sent_to_finish_for_their_code(client):
    from tests.annotator.study_support import PID_A, arrive, prolific_link

    batch = make_batch("crowd-done", n_items=1)
    _link, token = prolific_link(batch)
    arrive(token, PID_A, client=client)  # signs the worker in
    Item.objects.filter(batch=batch).update(n_annotations=batch.k)
    row = row_of(client.get(reverse("annotate_queue")).content.decode(), batch)
    assert "Finish and see your code" in row and "Start" not in row
    assert reverse("annotate_next", args=[batch.pk]) in row
