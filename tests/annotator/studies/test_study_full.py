"""A worker who arrives when no place is left gets a "study full" page with the platform's way to
leave, and no completion code; the study link command and the Studies page warn about a full batch."""

from __future__ import annotations

import csv
import io
from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotator.models import Assignment, Enrolment, GoldAnswer, QualityRule
from tests.annotator.study_support import PID_A, PID_B, arrive, prolific_link, rate_next, start
from tests.factories import make_annotation, make_batch, make_gold_items, make_user

pytestmark = pytest.mark.django_db
End = Enrolment.End


SCORES = {"coherence": 4, "relevance": 4, "instruction_following": 4, "safety_compliance": 5, "fluency": 5}


def one_place_left(name: str):
    """A batch of one item (k = 3) that two lab annotators rated already: one worker fills it."""
    batch = make_batch(name, n_items=1, k=3)
    for n in range(2):
        make_annotation(batch.items.get(), make_user(f"{name}-lab{n}"), SCORES)
    return batch


@pytest.fixture
def study():
    batch = one_place_left("tiny")
    link, token = prolific_link(batch, quota=5)
    return batch, link, token


def assert_full_page(response):
    html = response.content.decode()
    assert response.status_code == 200 and 'id="study-full"' in html
    assert "C0MPLETE" not in html and "completion-code" not in html and "cc=" not in html
    assert 'href="https://app.prolific.com/"' in html and "Cancel participation" in html


def test_a_worker_arriving_at_a_full_study_gets_the_full_page_and_no_account(study):
    batch, _link, token = study
    first, _ = arrive(token, PID_A)
    start(first, batch)
    assert rate_next(first, batch).status_code == 302
    users = get_user_model().objects.count()
    _late, response = arrive(token, PID_B)
    assert_full_page(response)
    assert not Enrolment.objects.filter(worker_id=PID_B).exists()
    assert get_user_model().objects.count() == users
    # The worker who finished still gets their code on reopening.
    _again, response = arrive(token, PID_A, client=first)
    done = first.get(reverse("annotate_next", args=[batch.pk]), follow=True)
    assert "C0MPLETE" in done.content.decode()


def test_a_lease_that_ran_out_is_a_free_place(study):
    batch, _link, token = study
    first, _ = arrive(token, PID_A)
    start(first, batch)
    first.get(reverse("annotate_next", args=[batch.pk]))
    lease = Assignment.objects.get(state=Assignment.State.LEASED)
    _second, response = arrive(token, PID_B)
    assert_full_page(response)  # held by the first worker: no place now
    Assignment.objects.filter(pk=lease.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    second, response = arrive(token, PID_B)
    assert response.status_code == 302
    start(second, batch)
    assert second.get(reverse("annotate_next", args=[batch.pk])).context["item"] == lease.item


def test_a_worker_who_found_no_place_after_arriving_leaves_without_a_code(study, admin_user):
    batch, _link, token = study
    first, _ = arrive(token, PID_A)
    second, _ = arrive(token, PID_B)  # arrives while a place is still free
    start(first, batch)
    rate_next(first, batch)
    start(second, batch)
    response = second.get(reverse("annotate_next", args=[batch.pk]))
    assert response["Location"] == reverse("study_done", args=[batch.pk])
    page = second.get(response["Location"])
    assert_full_page(page)
    assert "http-equiv" not in page.content.decode()  # no automatic trip to the completion URL
    assert Enrolment.objects.get(worker_id=PID_B).end == End.FULL
    admin = Client()
    admin.force_login(admin_user)
    rows = {
        r["worker_id"]: r
        for r in csv.DictReader(
            io.StringIO(admin.get(reverse("study_workers_csv", args=[batch.pk])).content.decode())
        )
    }
    assert rows[PID_B]["state"] == "study full" and rows[PID_B]["completed_at"] == ""


def test_training_done_then_no_place_still_pays():
    batch = one_place_left("trained")
    _link, token = prolific_link(batch, quota=5)
    QualityRule.objects.create(batch=batch, training_items=1, check_every=0)
    make_gold_items(batch, "training", 1, item_id="t0", prompt="Train", response="r", scores=SCORES, flags=[])
    client, _ = arrive(token, PID_B)
    start(client, batch)
    client.get(reverse("annotate_next", args=[batch.pk]))
    answer = GoldAnswer.objects.get()
    body = {f"score_{d}": str(v) for d, v in SCORES.items()} | {"constraint_0": "met", "constraint_1": "met"}
    client.post(reverse("gold_submit", args=[answer.pk]), body)
    assert GoldAnswer.objects.get().submitted_at is not None
    make_annotation(batch.items.get(), make_user("trained-lab-last"), SCORES)  # the last place goes meanwhile
    client.get(reverse("annotate_next", args=[batch.pk]))
    assert Enrolment.objects.get(worker_id=PID_B).end == End.DONE


def test_study_link_command_and_studies_page_warn_when_the_batch_is_full(study, admin_user):
    batch, _link, token = study
    args = ("study_link", batch.name, "--quota", "3", "--completion-code", "X")
    err = StringIO()
    call_command(*args, stdout=StringIO(), stderr=err)
    assert "full" not in err.getvalue()
    first, _ = arrive(token, PID_A)
    start(first, batch)
    rate_next(first, batch)
    err = StringIO()
    call_command(*args, stdout=StringIO(), stderr=err)
    assert "Warning: The batch tiny is full" in err.getvalue() and "study full" in err.getvalue()
    admin = Client()
    admin.force_login(admin_user)
    page = admin.post(
        reverse("study_link_new"),
        {
            "batch": batch.pk,
            "platform": "prolific",
            "quota": 3,
            "completion_code": "Y",
            "days": 10,
        },
    )
    assert page.status_code == 200 and "The batch tiny is full" in page.content.decode()
