"""A platform session belongs to the worker id it first came with: editing PROLIFIC_PID in the URL
makes no second account (no fresh quota) where the platform sends a SESSION_ID, and a finished
worker reopening the link keeps the session they finished in (that one is paid)."""

from __future__ import annotations

import csv
import io

import pytest
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.test import Client
from django.urls import reverse

from annotator.models import Enrolment
from annotator.studies.crowd import WorkerIds
from annotator.studies.services.links import LinkError, crowd_enter, study_link_create
from tests.annotator.study_support import PID_A, PID_B, arrive, prolific_link, rate_next, start
from tests.factories import make_batch

pytestmark = pytest.mark.django_db


@pytest.fixture
def study():
    batch = make_batch("bound", n_items=6)
    link, token = prolific_link(batch, quota=2)
    return batch, link, token


def test_an_edited_pid_in_the_same_session_is_refused_and_makes_nothing(study):
    _batch, _link, token = study
    client, response = arrive(token, PID_A, session="S-1")
    assert response.status_code == 302
    accounts = get_user_model().objects.count()
    edited, response = arrive(token, PID_B, session="S-1")
    html = response.content.decode()
    assert response.status_code == 403
    assert "belongs to another participant id" in html and "open the study again from Prolific" in html
    assert PID_A not in html  # the other worker's id is never shown
    assert (
        get_user_model().objects.count() == accounts
        and not Enrolment.objects.filter(worker_id=PID_B).exists()
    )
    assert "_auth_user_id" not in edited.session
    # The worker themselves goes on as before, in this session or a new one.
    assert arrive(token, PID_A, session="S-1")[1].status_code == 302
    assert arrive(token, PID_A, session="S-2")[1].status_code == 302
    # Another worker with their own session is welcome; taking the first worker's newer session is not.
    assert arrive(token, PID_B, session="S-3")[1].status_code == 302
    assert arrive(token, PID_B, session="S-2")[1].status_code == 403


def test_without_a_session_id_only_the_pid_binds(study):
    _batch, _link, token = study
    assert arrive(token, PID_A, session="")[1].status_code == 302
    assert arrive(token, PID_B, session="")[1].status_code == 302
    assert Enrolment.objects.count() == 2
    # A session id sent later binds then.
    assert arrive(token, PID_A, session="S-9")[1].status_code == 302
    assert Enrolment.objects.get(worker_id=PID_A).entry_session_id == "S-9"
    assert arrive(token, "1" * 24, session="S-9")[1].status_code == 403


def test_other_platforms_session_ids_bind_nobody():
    """A researcher may fill ``session_id`` with something workers share (an MTurk HIT id)."""
    batch = make_batch("hit", n_items=4)
    _link, token = study_link_create(batch=batch, platform="generic", quota=1, completion_code="MT")
    url = reverse("study_entry", args=[token])
    for worker in ("A1WORKER", "B2WORKER"):
        assert Client().get(f"{url}?worker_id={worker}&session_id=HIT-3XYZ").status_code == 302
    assert sorted(Enrolment.objects.values_list("worker_id", "platform_session_id", "entry_session_id")) == [
        ("A1WORKER", "HIT-3XYZ", ""),
        ("B2WORKER", "HIT-3XYZ", ""),
    ]


def test_the_database_holds_one_worker_per_session_even_when_both_arrive_at_once(study):
    batch, link, _token = study
    crowd_enter(link=link, ids=WorkerIds(PID_A, "study1", "S-1"))
    with pytest.raises(IntegrityError), transaction.atomic():
        Enrolment.objects.create(
            user=get_user_model().objects.create_user("racer"),
            batch=batch,
            platform="prolific",
            worker_id=PID_B,
            entry_session_id="S-1",
        )
    with pytest.raises(LinkError):
        crowd_enter(link=link, ids=WorkerIds(PID_B, "study1", "S-1"))


def test_a_finished_worker_reopening_the_link_keeps_the_session_they_finished_in(study, admin_user):
    batch, _link, token = study
    client, _ = arrive(token, PID_A, session="S-paid")
    start(client, batch)
    rate_next(client, batch)
    arrive(token, PID_A, client=client, session="S-second-tab")  # still working: the newer session counts
    assert Enrolment.objects.get(worker_id=PID_A).platform_session_id == "S-second-tab"
    rate_next(client, batch)
    client.get(reverse("annotate_next", args=[batch.pk]))
    enrolment = Enrolment.objects.get(worker_id=PID_A)
    assert enrolment.end == Enrolment.End.DONE
    _again, response = arrive(token, PID_A, session="S-later")
    assert response.status_code == 302
    admin = Client()
    admin.force_login(admin_user)
    rows = list(
        csv.DictReader(io.StringIO(admin.get(reverse("study_workers_csv", args=[batch.pk])).content.decode()))
    )
    assert [(r["worker_id"], r["session_id"], r["state"]) for r in rows] == [(PID_A, "S-second-tab", "done")]
