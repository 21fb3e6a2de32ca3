"""A crowd worker whose session time ran out before they submitted a single rating gets no completion
code and no trip back to the platform's completion URL: the end page says the time ran out before any
item was rated and asks them to return the study. With one rating or more the time-out still gives
the code. The researcher sees them as timed out with 0 items, without a code, and the Prolific review
never approves them."""

from __future__ import annotations

import csv
import io
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotator.management.commands import prolific_review as command
from annotator.models import Annotation, Enrolment, GoldAnswer, GoldItem, ProlificReturnRequest
from annotator.studies.selectors import link_ending
from annotator.studies.services.links import study_link_create
from tests.annotator.studies.prolific_fake import STUDY, Fake, worker
from tests.annotator.study_support import PID_A, PID_B, RATING, arrive, prolific_link, rate_next, start
from tests.factories import make_batch, make_user

pytestmark = pytest.mark.django_db
End = Enrolment.End


def time_out(enrolment, minutes=21):
    Enrolment.objects.filter(pk=enrolment.pk).update(started_at=timezone.now() - timedelta(minutes=minutes))


def crowd_worker(batch, token, pid=PID_A):
    client, _ = arrive(token, pid)
    start(client, batch)
    return client, Enrolment.objects.get(worker_id=pid)


@pytest.fixture
def timed():
    batch = make_batch("timed-zero", n_items=6)
    link, token = prolific_link(batch, quota=4, max_minutes=20)
    return batch, link, token


def assert_no_code(html):
    assert "C0MPLETE" not in html and 'id="completion-code"' not in html
    assert 'http-equiv="refresh"' not in html and "submissions/complete" not in html


@pytest.mark.parametrize("htmx", [False, True])
def test_a_late_first_rating_ends_without_a_code_and_asks_to_return(timed, htmx):
    batch, _link, token = timed
    client, enrolment = crowd_worker(batch, token)
    item = client.get(reverse("annotate_next", args=[batch.pk])).context["item"]
    time_out(enrolment)
    headers = {"HX-Request": "true"} if htmx else {}
    response = client.post(reverse("annotate_submit", args=[item.pk]), RATING, headers=headers)
    done = reverse("study_done", args=[batch.pk])
    assert (response["HX-Redirect"] if htmx else response["Location"]) == done
    page = client.get(done)
    html = page.content.decode()
    assert_no_code(html)
    assert page.context["ending"].code == "" and page.context["ending"].url == ""
    assert 'id="time-up-unrated"' in html and "before you rated any item" in html
    assert "Nothing more can be done in this study" in html
    assert "return your submission" in html and "Cancel participation" in html
    assert 'id="leave-link" href="https://app.prolific.com/"' in html
    assert "not saved" in html  # the late rating is still named
    enrolment.refresh_from_db()
    assert enrolment.end == End.TIMED_OUT and not Annotation.objects.exists()
    # Nothing more: the next item leads back to the same page, still without a code.
    follow = client.get(reverse("annotate_next", args=[batch.pk]), follow=True)
    assert_no_code(follow.content.decode())


def test_training_and_check_answers_do_not_earn_the_code(timed):
    batch, _link, token = timed
    client, enrolment = crowd_worker(batch, token)
    now = timezone.now()
    for n, kind in enumerate(("training", "check")):
        gold = GoldItem.objects.create(
            batch=batch, item_id=f"g{n}", kind=kind, prompt="p", response="r", scores={"coherence": 2}
        )
        GoldAnswer.objects.create(gold_item=gold, annotator=enrolment.user, shown_at=now, submitted_at=now)
    time_out(enrolment)
    html = client.get(reverse("annotate_next", args=[batch.pk]), follow=True).content.decode()
    assert_no_code(html)
    assert 'id="time-up-unrated"' in html
    assert Enrolment.objects.get(pk=enrolment.pk).end == End.TIMED_OUT


def test_one_rating_before_the_limit_keeps_the_code_and_the_completion_url(timed):
    batch, link, token = timed
    link.completion_url = "https://example.org/thanks"
    link.save()
    client, enrolment = crowd_worker(batch, token)
    rate_next(client, batch)
    time_out(enrolment)
    page = client.get(reverse("annotate_next", args=[batch.pk]), follow=True)
    html = page.content.decode()
    assert 'id="completion-code">C0MPLETE<' in html and "Your time is up" in html
    assert page.context["ending"].url == "https://example.org/thanks"
    assert 'id="time-up-unrated"' not in html


def test_no_rating_never_follows_the_completion_url(timed):
    batch, link, token = timed
    link.completion_url = "https://example.org/thanks"
    link.save()
    client, enrolment = crowd_worker(batch, token)
    time_out(enrolment)
    page = client.get(reverse("annotate_next", args=[batch.pk]), follow=True)
    assert page.context["ending"].url == "" and "example.org/thanks" not in page.content.decode()


def test_a_generic_platform_worker_is_told_to_return_the_task_without_a_code():
    batch = make_batch("timed-generic", n_items=3)
    _link, token = study_link_create(
        batch=batch, platform="generic", quota=2, completion_code="MT-42", max_minutes=10
    )
    client = Client()
    client.get(reverse("study_entry", args=[token]) + "?worker_id=A1B2C3D4E5")
    start(client, batch)
    time_out(Enrolment.objects.get(), minutes=11)
    html = client.get(reverse("annotate_next", args=[batch.pk]), follow=True).content.decode()
    assert "MT-42" not in html and 'id="completion-code"' not in html
    assert "return your submission" in html and "return the task on the platform you came from" in html


def test_an_account_whose_time_ran_out_unrated_is_told_so_and_sent_to_the_queue():
    batch = make_batch("timed-account", n_items=3)
    batch.max_session_minutes = 10
    batch.save()
    client = Client()
    client.force_login(make_user("lab-timed"))
    start(client, batch)
    time_out(Enrolment.objects.get(), minutes=11)
    html = client.get(reverse("annotate_next", args=[batch.pk]), follow=True).content.decode()
    assert 'id="time-up-unrated"' in html and "Back to your queue" in html
    assert "return your submission" not in html


def test_the_countdown_notice_promises_a_code_only_after_a_rating(timed):
    batch, _link, token = timed
    client, _ = crowd_worker(batch, token)
    html = client.get(reverse("annotate_next", args=[batch.pk])).content.decode()
    assert "Finish and see your code" not in html and ">Finish</a>" in html
    rate_next(client, batch)
    html = client.get(reverse("annotate_next", args=[batch.pk])).content.decode()
    assert "Finish and see your code" in html


def test_the_instructions_say_the_time_limit_needs_a_rating_for_the_code(timed):
    batch, _link, token = timed
    client, _ = arrive(token, PID_A)
    html = client.get(reverse("study_instructions", args=[batch.pk])).content.decode()
    assert "If it ends before you rate any item, there is no completion code." in html


@pytest.mark.parametrize("end", [e for e, _label in End.choices])
@pytest.mark.parametrize("annotations", [0, 1])
def test_one_rule_decides_the_code_on_the_end_page_and_in_the_review(end, annotations):
    """The end page's code and the review's "earned the code" are the same rule."""
    from annotator.studies.selectors import earns_completion_code  # new with this rule

    batch = make_batch(f"rule-{end or 'working'}-{annotations}", n_items=2)
    link, _token = prolific_link(batch, quota=2)
    shown = link_ending(link, end, annotations=annotations).code == link.completion_code
    assert shown == earns_completion_code(end=end, annotations=annotations)
    assert shown == (end == End.DONE or (end == End.TIMED_OUT and annotations > 0))


def test_the_worker_list_and_csv_show_timed_out_with_nothing_rated_and_no_code(timed, admin_user):
    batch, _link, token = timed
    _c, unrated = crowd_worker(batch, token, PID_A)
    rated_client, rated = crowd_worker(batch, token, PID_B)
    rate_next(rated_client, batch)
    for e in (unrated, rated):
        time_out(e)
    for client in (_c, rated_client):
        client.get(reverse("annotate_next", args=[batch.pk]))  # the gate records the time-out
    admin = Client()
    admin.force_login(admin_user)
    page = admin.get(reverse("assignment_batch", args=[batch.pk]))
    rows = {w.enrolment.worker_id: (w.state, w.items_done, w.code_given) for w in page.context["workers"]}
    assert rows == {PID_A: ("timed out", 0, False), PID_B: ("timed out", 1, True)}
    assert page.content.decode().count("(nothing rated: no completion code)") == 1
    body = admin.get(reverse("study_workers_csv", args=[batch.pk])).content.decode()
    by_worker = {r["worker_id"]: r for r in csv.DictReader(io.StringIO(body))}
    assert by_worker[PID_A]["state"] == "timed out" and by_worker[PID_A]["items_done"] == "0"
    assert by_worker[PID_A]["completion_code_given"] == "0"
    assert by_worker[PID_B]["completion_code_given"] == "1"


# --------------------------------------------------------------------------- the Prolific review
A, B = "a" * 24, "b" * 24


@pytest.fixture
def fake(monkeypatch):
    fake = Fake()
    monkeypatch.setattr(command, "client_factory", fake.client)
    return fake


def review(batch, *args) -> str:
    out = StringIO()
    call_command("prolific_review", batch.name, "--study-id", STUDY, *args, stdout=out)
    return out.getvalue()


def test_the_review_never_approves_a_time_out_with_nothing_rated(fake):
    batch = make_batch("pro-timed", n_items=4)
    worker(batch, A, session="subA", end=End.TIMED_OUT, items=0)
    worker(batch, B, session="subB", end=End.TIMED_OUT, items=1)
    fake.add("subA", A)
    fake.add("subB", B)
    output = review(batch, "--approve", "--bonus-per-item", "0.10")
    assert fake.posts("bulk-approve")[0][1]["submission_ids"] == ["subB"]
    assert fake.posts("request-return") == []
    assert "timed out with 0 items rated: no completion code (--reject-failed-checks asks them" in output
    assert set(fake.paid) == {B}


def test_a_time_out_with_nothing_rated_is_asked_to_return_once(fake):
    batch = make_batch("pro-timed-return", n_items=4)
    worker(batch, A, session="subA", end=End.TIMED_OUT, items=0)
    fake.add("subA", A)
    review(batch, "--approve", "--reject-failed-checks")
    assert fake.posts("bulk-approve") == [] and fake.posts("/transition/") == []
    assert fake.posts("request-return") == [
        (
            "/api/v1/submissions/subA/request-return/",
            {
                "request_return_reasons": [
                    "Your session's time limit ran out before you rated any item, so there is no "
                    "completion code for this study."
                ]
            },
        )
    ]
    assert ProlificReturnRequest.objects.filter(submission_id="subA").count() == 1
    again = review(batch, "--approve", "--reject-failed-checks")
    assert len(fake.posts("request-return")) == 1
    assert "a return was requested before: waiting for it" in again
