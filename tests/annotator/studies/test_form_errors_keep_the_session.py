"""A rating form sent back with its errors ("Not saved yet: please fix", or a skip without a reason)
shows the study as the item's first showing did: the session countdown with its time-up notice, the
quota ("up to N more for you") and a training item's own number. Before, such a page lost the countdown
(a worker who forgot a score ran out of time with no notice and a live Submit), said "up to 24 more"
on a quota-4 link and called the second training item "Training item 1"."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from annotator.models import GoldAnswer, QualityRule
from tests.annotator.study_support import PID_A, arrive, prolific_link, start
from tests.factories import make_batch, make_gold_items

pytestmark = pytest.mark.django_db
DIMS = ("coherence", "relevance", "instruction_following", "safety_compliance", "fluency")
MISSING_SCORES = {"score_coherence": "4"}  # four dimensions left blank


def strip(html: str) -> dict:
    """What the rating page says of the worker's place in the study."""
    label = re.search(r'<strong class="item-label">(.*?)</strong>', html).group(1)
    more = re.search(r"· (up to \d+ more for you|the last one for you)", html).group(1)
    timer = re.search(r'id="session-timer"[^>]*data-seconds-left="(\d+)"', html)
    return {
        "label": label,
        "more": more,
        "countdown": timer is not None and 0 < int(timer.group(1)) <= 20 * 60,
        "time_up_notice": 'id="session-over"' in html,
    }


def timed_worker(batch):
    _link, token = prolific_link(batch, quota=4, max_minutes=20)
    client, _ = arrive(token, PID_A)
    start(client, batch)
    return client


@pytest.mark.parametrize("sent", ["rating", "skip"])
def test_an_item_sent_back_keeps_the_countdown_and_the_quota(sent):
    batch = make_batch("timed-errors", n_items=30)
    client = timed_worker(batch)
    shown = client.get(reverse("annotate_next", args=[batch.pk]))
    item = shown.context["item"]
    if sent == "rating":
        back = client.post(reverse("annotate_submit", args=[item.pk]), MISSING_SCORES)
        assert "Instruction-Following needs a score." in back.content.decode()
    else:
        back = client.post(reverse("annotate_skip", args=[item.pk]), {"skip_reason": " "})
        assert "Say why you skip this item." in back.content.decode()
    assert back.status_code == 422
    first, again = strip(shown.content.decode()), strip(back.content.decode())
    assert first == {
        "label": "Item 1",
        "more": "up to 3 more for you",
        "countdown": True,
        "time_up_notice": True,
    }
    assert again == first


def with_training(name: str):
    batch = make_batch(name, n_items=30)
    QualityRule.objects.create(batch=batch, training_items=2, check_every=0)
    make_gold_items(
        batch,
        "training",
        2,
        item_id="t{n}",
        prompt="Training {n}",
        response="Take the ferry.",
        scores=dict.fromkeys(DIMS, 4),
    )
    return batch


@pytest.mark.parametrize("sent", ["rating", "skip"])
def test_a_training_item_sent_back_keeps_its_number_and_the_countdown(sent):
    batch = with_training("training-errors")
    client = timed_worker(batch)
    client.get(reverse("annotate_next", args=[batch.pk]))
    first = GoldAnswer.objects.get(submitted_at__isnull=True)
    client.post(reverse("gold_submit", args=[first.pk]), {f"score_{d}": "4" for d in DIMS})
    shown = client.get(reverse("annotate_next", args=[batch.pk]))
    second = GoldAnswer.objects.get(submitted_at__isnull=True)
    assert second.gold_item.item_id == "t1"
    if sent == "rating":
        back = client.post(reverse("gold_submit", args=[second.pk]), MISSING_SCORES)
    else:
        back = client.post(reverse("gold_skip", args=[second.pk]), {"skip_reason": ""})
    assert back.status_code == 422
    assert strip(shown.content.decode())["label"] == "Training item 2"
    assert strip(back.content.decode()) == strip(shown.content.decode())
