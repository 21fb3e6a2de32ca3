"""The admin's assignment page: item states, leases and who holds them, release, capacity."""

import pytest
from django.urls import reverse

from annotator.models import Assignment, Item
from annotator.rating.services.assignment import item_next_for_annotator
from tests.factories import make_annotation, make_batch, make_user

pytestmark = pytest.mark.django_db

ALL3 = {"coherence": 3, "relevance": 3, "instruction_following": 3, "safety_compliance": 3, "fluency": 3}


def test_states_leases_and_release(client):
    batch = make_batch(n_items=3, k=3)
    items = list(batch.items.all())
    for i in range(3):
        make_annotation(items[0], make_user(f"done{i}"), ALL3)
    holders = [make_user(f"h{i}") for i in range(3)]
    leases = [item_next_for_annotator(batch=batch, annotator=u) for u in holders]
    # The first pick is random among the open items; the next ones join it, being closer to completion.
    (held,) = {lease.item_id for lease in leases}
    assert held != items[0].pk
    client.force_login(make_user("boss", role="admin"))
    html = client.get(reverse("assignment_batch", args=[batch.pk])).content.decode()
    assert "h0" in html and "h2" in html
    states = client.get(reverse("assignment_batch", args=[batch.pk])).context["states"]
    assert (states.open, states.leased, states.complete) == (1, 1, 1)
    response = client.post(reverse("assignment_release", args=[batch.pk, leases[0].pk]))
    assert response.status_code == 302
    assert Assignment.objects.get(pk=leases[0].pk).state == Assignment.State.RELEASED
    assert Item.objects.get(pk=held).n_leased == 2
    again = client.post(reverse("assignment_release", args=[batch.pk, leases[0].pk]), follow=True)
    assert "not leased" in again.content.decode()
    assert batch.name in client.get(reverse("assignment_overview")).content.decode()


def test_warns_when_one_system_per_prompt_leaves_too_few_annotators(client):
    batch = make_batch(n_items=4, k=3, systems=("a", "b"))
    batch.one_system_per_prompt = True
    batch.save()
    for i in range(4):
        make_user(f"a{i}")
    client.force_login(make_user("boss", role="admin"))
    html = client.get(reverse("assignment_batch", args=[batch.pk])).content.decode()
    # 2 systems per prompt × k=3 needs 6 annotators; 4 annotators + the admin can rate.
    assert "needs at least 6 annotators; 5 can rate this batch" in html
    make_user("a4")
    html = client.get(reverse("assignment_batch", args=[batch.pk])).content.decode()
    assert "needs at least" not in html
