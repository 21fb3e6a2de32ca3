"""The end page's code sentence names the platform in words a worker reads naturally, and the code
is shown large with a copy button."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from annotator.models import Enrolment
from annotator.studies.services.enrolment import enrolment_end
from annotator.studies.services.links import study_link_create
from tests.annotator.study_support import PID_A, arrive, prolific_link
from tests.factories import make_batch

pytestmark = pytest.mark.django_db


def ended(client, batch, end):
    enrolment_end(enrolment=Enrolment.objects.get(batch=batch), end=end)
    return client.get(reverse("study_done", args=[batch.pk])).content.decode()


def test_a_generic_platform_code_sentence_reads_naturally():
    batch = make_batch("mturk", n_items=2)
    _link, token = study_link_create(batch=batch, platform="generic", quota=1, completion_code="MT-42")
    client = Client()
    client.get(reverse("study_entry", args=[token]) + "?worker_id=A1B2C3D4E5")
    html = ended(client, batch, Enrolment.End.DONE)
    assert "Other platform" not in html and "worker id:" not in html
    assert "Your completion code: copy it into the platform you came from" in html
    assert 'id="completion-code">MT-42<' in html


def test_a_generic_platform_without_a_code_asks_to_return_the_task_in_plain_words():
    batch = make_batch("mturk-declined", n_items=2)
    _link, token = study_link_create(batch=batch, platform="generic", quota=1, completion_code="MT-42")
    client = Client()
    client.get(reverse("study_entry", args=[token]) + "?worker_id=A1B2C3D4E5")
    html = ended(client, batch, Enrolment.End.DECLINED)
    assert (
        "Other platform" not in html
        and "return your submission</strong> on the platform you came from" in html
    )


def test_prolific_code_is_large_with_a_copy_button():
    batch = make_batch("prolific-end", n_items=2)
    prolific_link(batch, quota=1)
    _link, token = prolific_link(batch, quota=1)
    client, _ = arrive(token, PID_A)
    html = ended(client, batch, Enrolment.End.DONE)
    assert "Your Prolific completion code" in html
    assert 'class="copy-code" data-copy="completion-code"' in html and "js/copy_code.js" in html


def test_the_end_page_counts_the_rated_items_and_names_the_checks_apart():
    """The count is what the quota and the review count (the annotations); an answered check is named
    apart, and training is neither."""
    from django.utils import timezone

    from annotator.models import GoldAnswer, GoldItem
    from tests.annotator.study_support import rate_next, start

    batch = make_batch("end-count", n_items=3)
    _link, token = prolific_link(batch, quota=2)
    client, _ = arrive(token, PID_A)
    start(client, batch)
    assert rate_next(client, batch).status_code in (200, 302)
    worker = Enrolment.objects.get(batch=batch).user
    now = timezone.now()
    for n, kind in enumerate(("check", "training")):
        gold = GoldItem.objects.create(
            batch=batch, item_id=f"g{n}", kind=kind, prompt="p", response="r", scores={"coherence": 2}
        )
        GoldAnswer.objects.create(gold_item=gold, annotator=worker, shown_at=now, submitted_at=now)
    html = ended(client, batch, Enrolment.End.DONE)
    assert "You rated 1 item. You also answered 1 quality check, not counted among them." in html
    assert "training" not in html.lower()


def test_no_checks_no_sentence_about_them():
    from tests.annotator.study_support import rate_next, start

    batch = make_batch("end-count-plain", n_items=3)
    _link, token = prolific_link(batch, quota=2)
    client, _ = arrive(token, PID_A)
    start(client, batch)
    rate_next(client, batch)
    html = ended(client, batch, Enrolment.End.DONE)
    assert "You rated 1 item.</p>" in html and "quality check" not in html
