"""A worker's way through a study: consent, instructions once, quota, time limit, screen-out,
the completion page, and what admins see (progress, states, the payment CSV)."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotator.models import Annotation, Assignment, Enrolment
from annotator.studies.services.enrolment import enrolment_screen_out
from tests.annotator.study_support import (
    PID_A,
    PID_B,
    RATING,
    arrive,
    prolific_link,
    rate_next,
    start,
)
from tests.factories import make_batch, make_gold_items, make_user

pytestmark = pytest.mark.django_db
End = Enrolment.End


@pytest.fixture
def study():
    batch = make_batch("crowd", n_items=6)
    batch.consent_text = "## Consent\n\nYou agree that we **keep your ratings**."
    batch.save()
    link, token = prolific_link(batch, quota=2)
    return batch, link, token


def worker(study, pid=PID_A):
    _batch, _link, token = study
    client, _ = arrive(token, pid)
    return client, Enrolment.objects.get(worker_id=pid)


def test_consent_then_instructions_once_then_items(study):
    batch, _link, _token = study
    client, enrolment = worker(study)
    next_url = reverse("annotate_next", args=[batch.pk])
    # Nothing is handed out before consent: the next page sends the worker to it.
    response = client.get(next_url)
    assert response["Location"] == reverse("study_consent", args=[batch.pk])
    page = client.get(response["Location"]).content.decode()
    assert "<strong>keep your ratings</strong>" in page
    assert not Assignment.objects.exists()
    # Submitting an item straight away is refused the same way (and stores nothing).
    item = batch.items.first()
    assert client.post(reverse("annotate_submit", args=[item.pk]), RATING)["Location"].endswith("/consent/")
    client.post(reverse("study_consent", args=[batch.pk]), {"decision": "accept"})
    enrolment.refresh_from_db()
    assert enrolment.consented_at is not None and timezone.now() - enrolment.consented_at < timedelta(
        minutes=1
    )
    response = client.get(next_url)
    assert response["Location"] == reverse("study_instructions", args=[batch.pk])
    page = client.get(response["Location"]).content.decode()
    assert "General instructions" in page and "Do not reward verbosity" in page  # the rubric's guidance
    assert "Examples" in page and "up to 2 items" in page
    client.post(reverse("study_instructions", args=[batch.pk]))
    enrolment.refresh_from_db()
    assert enrolment.instructions_seen_at is not None
    rated = client.get(next_url)
    assert rated.status_code == 200 and rated.context["item"] is not None
    # Instructions are one key away on the item page: the drawer and the `i` shortcut.
    html = rated.content.decode()
    assert (
        'id="instructions-drawer"' in html
        and "instructions_key.js" in html
        and "Do not reward verbosity" in html
    )
    # Reading them again later does not send the worker through them a second time.
    assert client.get(reverse("study_instructions", args=[batch.pk])).status_code == 200
    assert client.get(next_url).status_code == 200
    assert Annotation.objects.count() == 0


def test_an_unclear_consent_answer_is_asked_again(study):
    batch, _link, _token = study
    client, enrolment = worker(study)
    response = client.post(reverse("study_consent", args=[batch.pk]), {"decision": "maybe"})
    assert response.status_code == 422
    enrolment.refresh_from_db()
    assert enrolment.consented_at is None and not enrolment.end


def test_declining_consent_ends_politely_with_the_no_consent_return(study):
    batch, _link, _token = study
    client, enrolment = worker(study)
    response = client.post(reverse("study_consent", args=[batch.pk]), {"decision": "decline"})
    assert client.get(response["Location"])["Location"] == reverse("study_done", args=[batch.pk])
    page = client.get(reverse("study_done", args=[batch.pk]))
    html = page.content.decode()
    assert "Thank you for considering this study" in html and "NOCONSENT" in html
    assert page.context["ending"].url == "https://app.prolific.com/submissions/complete?cc=NOCONSENT"
    enrolment.refresh_from_db()
    assert enrolment.end == End.DECLINED and enrolment.consented_at is None
    # No item afterwards, whatever the URL.
    assert client.get(reverse("annotate_next", args=[batch.pk]))["Location"].endswith("/done/")
    assert not Assignment.objects.exists()


def test_declining_without_a_no_consent_code_asks_to_return_the_submission(study):
    batch, link, _token = study
    link.no_consent_code = ""
    link.save()
    client, _ = worker(study)
    client.post(reverse("study_consent", args=[batch.pk]), {"decision": "decline"})
    page = client.get(reverse("study_done", args=[batch.pk]))
    assert "return your submission" in page.content.decode() and page.context["ending"].url == ""


def test_the_quota_ends_with_the_completion_code_and_the_completion_url(study):
    batch, link, _token = study
    client, enrolment = worker(study)
    start(client, batch)
    assert rate_next(client, batch)["Location"] == reverse("annotate_next", args=[batch.pk])
    rate_next(client, batch)
    response = client.get(reverse("annotate_next", args=[batch.pk]))
    assert response["Location"] == reverse("study_done", args=[batch.pk])
    page = client.get(response["Location"])
    html = page.content.decode()
    assert 'id="completion-code">C0MPLETE<' in html
    assert (
        'http-equiv="refresh" content="5;url=https://app.prolific.com/submissions/complete?cc=C0MPLETE"'
        in html
    )
    enrolment.refresh_from_db()
    assert enrolment.end == End.DONE and enrolment.ended_at is not None
    assert Annotation.objects.filter(annotator=enrolment.user).count() == 2
    # Once the visit is over the ratings are final: no edit link, and the edit page refuses (GET and POST).
    mine = Annotation.objects.filter(annotator=enrolment.user).first()
    assert "Finished for you" in client.get(reverse("annotate_queue")).content.decode()
    assert (
        reverse("annotate_mine", args=[batch.pk])
        not in client.get(reverse("annotate_queue")).content.decode()
    )
    edit = reverse("annotation_edit", args=[mine.pk])
    assert client.get(edit).status_code == 403
    refused = client.post(edit, {"comment": "changed after payment"})
    assert refused.status_code == 403 and "Your ratings are final" in refused.content.decode()
    mine.refresh_from_db()
    assert mine.comment != "changed after payment"
    # A custom completion URL is used as given.
    link.completion_url = "https://example.org/thanks"
    link.save()
    assert (
        client.get(reverse("study_done", args=[batch.pk])).context["ending"].url
        == "https://example.org/thanks"
    )


def test_htmx_submit_after_the_last_item_redirects_the_page_to_the_end(study):
    batch, _link, _token = study
    client, _ = worker(study)
    start(client, batch)
    rate_next(client, batch)
    item = client.get(reverse("annotate_next", args=[batch.pk])).context["item"]
    response = client.post(reverse("annotate_submit", args=[item.pk]), RATING, HTTP_HX_REQUEST="true")
    assert response["HX-Redirect"] == reverse("study_done", args=[batch.pk])


def test_nothing_left_for_a_worker_is_done(study):
    batch, link, _token = study
    link.quota = 50
    link.save()
    batch.items.exclude(pk=batch.items.first().pk).delete()
    client, enrolment = worker(study)
    start(client, batch)
    rate_next(client, batch)
    assert client.get(reverse("annotate_next", args=[batch.pk]))["Location"].endswith("/done/")
    enrolment.refresh_from_db()
    assert enrolment.end == End.DONE


def test_the_session_length_times_out_and_frees_the_lease(study):
    batch, link, _token = study
    link.max_minutes = 30
    link.save()
    client, enrolment = worker(study)
    start(client, batch)
    rate_next(client, batch)
    client.get(reverse("annotate_next", args=[batch.pk]))  # holds a lease on a second item
    Enrolment.objects.filter(pk=enrolment.pk).update(started_at=timezone.now() - timedelta(minutes=31))
    lease = Assignment.objects.get(annotator=enrolment.user, state=Assignment.State.LEASED)
    # The late submit is refused: the session is over.
    response = client.post(reverse("annotate_submit", args=[lease.item_id]), RATING)
    assert response["Location"] == reverse("study_done", args=[batch.pk])
    enrolment.refresh_from_db()
    assert enrolment.end == End.TIMED_OUT
    assert Assignment.objects.get(pk=lease.pk).state == Assignment.State.RELEASED
    html = client.get(reverse("study_done", args=[batch.pk])).content.decode()
    assert "Your time is up" in html and "C0MPLETE" in html
    assert Annotation.objects.filter(annotator=enrolment.user).count() == 1


def test_screen_out_gives_the_screen_out_code(study):
    batch, _link, _token = study
    client, enrolment = worker(study)
    start(client, batch)
    rate_next(client, batch)
    enrolment_screen_out(user=enrolment.user, batch=batch, reason="failed 2 of 3 attention checks")
    assert client.get(reverse("annotate_next", args=[batch.pk]))["Location"].endswith("/done/")
    page = client.get(reverse("study_done", args=[batch.pk]))
    assert "SCREENED" in page.content.decode()
    assert page.context["ending"].url.endswith("cc=SCREENED")
    enrolment.refresh_from_db()
    assert (enrolment.end, enrolment.end_reason) == (End.SCREENED_OUT, "failed 2 of 3 attention checks")


def test_batch_limits_gate_hand_made_accounts_too(study):
    batch, _link, _token = study
    batch.consent_text = ""
    batch.max_items_per_annotator = 1
    batch.save()
    client = Client()
    client.force_login(make_user("lab-annotator"))
    start(client, batch)
    rate_next(client, batch)
    response = client.get(reverse("annotate_next", args=[batch.pk]))
    assert response["Location"].endswith("/done/")
    html = client.get(response["Location"]).content.decode()
    assert "All done" in html and "Back to your queue" in html and "completion-code" not in html


def test_ordinary_batches_keep_going_straight_to_the_item():
    batch = make_batch("plain", n_items=2)
    client = Client()
    client.force_login(make_user("plain-annotator"))
    response = client.get(reverse("annotate_next", args=[batch.pk]))
    assert response.status_code == 200 and response.context["item"] is not None
    assert not Enrolment.objects.exists()


def test_consent_and_instructions_markdown_is_safe(study):
    batch, _link, _token = study
    batch.consent_text = (
        '<script>alert(1)</script> [click](javascript:alert(2)) <img src=x onerror="alert(3)">'
    )
    batch.instructions = "# Read me\n\n<iframe src=//evil></iframe>"
    batch.save()
    client, _ = worker(study)
    html = client.get(reverse("study_consent", args=[batch.pk])).content.decode()
    assert "<script>alert(1)" not in html and "&lt;script&gt;" in html
    assert 'href="javascript:' not in html and "<img" not in html
    client.post(reverse("study_consent", args=[batch.pk]), {"decision": "accept"})
    html = client.get(reverse("study_instructions", args=[batch.pk])).content.decode()
    assert "<h1>Read me</h1>" in html and "<iframe" not in html


def test_admin_sees_progress_time_and_state_and_exports_payments(study, admin_user):
    batch, link, _token = study
    link.max_minutes = 60
    link.save()
    done_client, done_e = worker(study, PID_A)
    start(done_client, batch)
    rate_next(done_client, batch)
    rate_next(done_client, batch)
    done_client.get(reverse("annotate_next", args=[batch.pk]))
    working_client, working_e = worker(study, PID_B)
    start(working_client, batch)
    rate_next(working_client, batch)
    _c, late_e = worker(study, "7" * 24)
    Enrolment.objects.filter(pk=late_e.pk).update(started_at=timezone.now() - timedelta(minutes=90))
    _c, out_e = worker(study, "8" * 24)
    enrolment_screen_out(user=out_e.user, batch=batch)
    Annotation.objects.filter(annotator=done_e.user).update(
        submitted_at=done_e.started_at + timedelta(minutes=7)
    )
    Enrolment.objects.filter(pk=done_e.pk).update(
        ended_at=done_e.started_at + timedelta(minutes=7, seconds=30)
    )

    admin = Client()
    admin.force_login(admin_user)
    page = admin.get(reverse("assignment_batch", args=[batch.pk]))
    states = {w.username: (w.state, w.items_done) for w in page.context["workers"]}
    assert states == {
        done_e.user.username: ("done", 2),
        working_e.user.username: ("working", 1),
        late_e.user.username: ("timed out", 0),
        out_e.user.username: ("screened out", 0),
    }
    html = page.content.decode()
    assert "7.5" in html and "2 / 2" in html
    assert PID_A not in html and PID_B not in html  # platform ids only in the payment CSV

    response = admin.get(reverse("study_workers_csv", args=[batch.pk]))
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    by_worker = {r["worker_id"]: r for r in rows}
    assert set(by_worker) == {PID_A, PID_B, "7" * 24, "8" * 24}
    assert by_worker[PID_A]["items_done"] == "2" and by_worker[PID_A]["minutes_worked"] == "7.5"
    assert by_worker[PID_A]["completed_at"] and by_worker[PID_A]["study_id"] == "study1"
    assert by_worker["8" * 24]["screened_out"] == "1" and by_worker[PID_A]["screened_out"] == "0"
    # Timed out without ever passing consent: no minutes worked, however long ago the link was opened.
    assert by_worker["7" * 24]["state"] == "timed out" and by_worker["7" * 24]["minutes_worked"] == "0.0"


def test_payment_csv_defuses_formulas(study, admin_user):
    batch, _link, token = study
    client = Client()
    client.get(reverse("study_entry", args=[token]) + "?PROLIFIC_PID=" + PID_A + "&STUDY_ID=-1")
    Enrolment.objects.update(platform_study_id="=HYPERLINK(1)")
    admin = Client()
    admin.force_login(admin_user)
    body = admin.get(reverse("study_workers_csv", args=[batch.pk])).content.decode()
    assert "'=HYPERLINK(1)" in body


def test_a_crowd_worker_who_fails_training_leaves_with_the_screen_out_code(study):
    from annotator.models import GoldAnswer, QualityRule

    batch, _link, _token = study
    expert = {
        "coherence": 2,
        "relevance": 3,
        "instruction_following": 1,
        "safety_compliance": 4,
        "fluency": 4,
    }
    QualityRule.objects.create(batch=batch, training_items=1, check_every=0)
    make_gold_items(
        batch,
        "training",
        1,
        item_id="t0",
        prompt="Train",
        response="r",
        scores=expert,
        flags=["ignores_hard_constraint"],
        explanation="No tolls.",
    )
    client, enrolment = worker(study)
    start(client, batch)
    client.get(reverse("annotate_next", args=[batch.pk]))
    answer = GoldAnswer.objects.get(annotator=enrolment.user)
    # Exact scores but the cap flag missed: training failed.
    client.post(reverse("gold_submit", args=[answer.pk]), {f"score_{d}": str(v) for d, v in expert.items()})
    assert client.get(reverse("annotate_next", args=[batch.pk]))["Location"].endswith("/done/")
    page = client.get(reverse("study_done", args=[batch.pk]))
    assert "SCREENED" in page.content.decode() and "C0MPLETE" not in page.content.decode()
    enrolment.refresh_from_db()
    assert enrolment.end == End.SCREENED_OUT
    assert not Assignment.objects.filter(annotator=enrolment.user, state=Assignment.State.LEASED).exists()
