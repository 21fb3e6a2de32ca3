"""prolific_review: approvals only through the study binding, rejections only by Prolific's rules,
return requests for training failures, dry runs that send nothing but GETs."""

from __future__ import annotations

from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotator.management.commands import prolific_review as command
from annotator.models import AnnotatorStanding, Enrolment
from annotator.studies.prolific.services.review import MIN_MESSAGE_CHARS, rejection_message
from annotator.studies.prolific.services.run import prolific_review_run
from tests.annotator.studies.prolific_fake import STUDY, Fake, worker
from tests.factories import make_batch

pytestmark = pytest.mark.django_db

A, B, C, D = "a" * 24, "b" * 24, "c" * 24, "d" * 24


@pytest.fixture
def batch():
    return make_batch("pro", n_items=6)


@pytest.fixture
def fake(monkeypatch):
    fake = Fake()
    monkeypatch.setattr(command, "client_factory", fake.client)
    return fake


def run(batch, *args) -> str:
    out = StringIO()
    call_command("prolific_review", batch.name, "--study-id", STUDY, *args, stdout=out)
    return out.getvalue()


def statuses(fake) -> dict:
    return {s["participant_id"]: s["status"] for s in fake.submissions.values()}


def test_approves_only_bound_finished_workers_by_submission_id(batch, fake):
    worker(batch, A, session="subA")
    worker(batch, B, session="subB", end="")  # still working: no code
    worker(batch, C, session="other-session")  # Prolific's submission is not the session they came with
    worker(batch, D, session="subD", study="another-study")
    for sid, pid in (("subA", A), ("subB", B), ("subC", C), ("subD", D), ("subE", "e" * 24)):
        fake.add(sid, pid)
    output = run(batch, "--approve")
    assert fake.posts("bulk-approve") == [
        ("/api/v1/submissions/bulk-approve/", {"study_id": STUDY, "submission_ids": ["subA"]})
    ]
    assert statuses(fake) == {
        A: "APPROVED",
        B: "AWAITING REVIEW",
        C: "AWAITING REVIEW",
        D: "AWAITING REVIEW",
        "e" * 24: "AWAITING REVIEW",
    }
    assert "not the session the worker came with" in output and "another Prolific study" in output
    assert "no worker of this batch" in output and "did not earn the completion code" in output
    assert fake.auth_seen == {"Token test-token-0123456789"}


def test_excluded_workers_are_never_approved(batch, fake):
    e = worker(batch, A, session="subA")
    AnnotatorStanding.objects.create(batch=batch, annotator=e.user, excluded=True)
    fake.add("subA", A)
    assert "excluded by quality control" in run(batch, "--approve")
    assert fake.posts() == []


def test_dry_run_sends_nothing_but_gets(batch, fake):
    worker(batch, A, session="subA")
    worker(batch, B, session="subB", failed_checks=2, passed_checks=1)
    fake.add("subA", A)
    fake.add("subB", B)
    output = run(
        batch,
        "--approve",
        "--reject-failed-checks",
        "--bonus-per-item",
        "0.10",
        "--dry-run",
        "--max-rejection-rate",
        "50",
    )
    assert {m for m, _, _ in fake.requests} == {"GET"}
    assert (
        "would approve" in output and "would reject" in output and "would pay bonus per-item 0.20" in output
    )
    assert statuses(fake) == {A: "AWAITING REVIEW", B: "AWAITING REVIEW"}
    from annotator.models import ProlificBonus

    assert not ProlificBonus.objects.exists()


def test_rejection_follows_prolifics_rules(batch, fake):
    worker(batch, A, session="subA", failed_checks=2, passed_checks=3)  # rejected
    worker(batch, B, session="subB", failed_checks=1, passed_checks=4)  # one failure: approved
    worker(batch, C, session="subC", failed_checks=3, minutes=4)  # a short session: never rejected
    for sid, pid in (("subA", A), ("subB", B), ("subC", C)):
        fake.add(sid, pid)
    for n in range(7):  # other decided submissions, so the rate stays under the cap
        fake.add(f"old{n}", f"{n}" * 24, status="APPROVED")
    output = run(batch, "--approve", "--reject-failed-checks")
    rejects = fake.posts("/transition/")
    assert [p for p, _ in rejects] == ["/api/v1/submissions/subA/transition/"]
    body = rejects[0][1]
    assert body["action"] == "REJECT" and body["rejection_category"] == "FAILED_CHECK"
    assert len(body["message"]) >= 100 and "check-1" in body["message"] and "check-2" in body["message"]
    assert "2 of the 5 attention checks" in body["message"]
    assert (
        statuses(fake)[A] == "REJECTED"
        and statuses(fake)[B] == "APPROVED"
        and statuses(fake)[C] == "AWAITING REVIEW"
    )
    assert "lasted 4.0 minutes" in output
    assert "running rejection rate 10.0% (cap 10%)" in output


def test_without_the_flag_failed_checks_are_held_not_rejected_nor_approved(batch, fake):
    worker(batch, A, session="subA", failed_checks=2)
    fake.add("subA", A)
    output = run(batch, "--approve")
    assert fake.posts() == [] and "decide by hand or use --reject-failed-checks" in output


def test_the_rejection_cap_holds_further_rejections(batch, fake):
    for pid, sid in ((A, "subA"), (B, "subB")):
        worker(batch, pid, session=sid, failed_checks=2)
        fake.add(sid, pid)
    for n in range(8):
        fake.add(f"old{n}", f"{n}" * 24, status="APPROVED")
    output = run(batch, "--reject-failed-checks", "--max-rejection-rate", "10")
    assert len(fake.posts("/transition/")) == 1  # 1 of 10 is 10%; a second would make 20%
    assert "not rejected: the rejection rate would pass the cap of 10%" in output


def test_training_failures_get_a_return_request_not_a_rejection(batch, fake):
    e = worker(batch, A, session="subA", end=Enrolment.End.SCREENED_OUT, items=0)
    AnnotatorStanding.objects.create(
        batch=batch, annotator=e.user, training=AnnotatorStanding.Training.FAILED
    )
    fake.add("subA", A)
    run(batch, "--approve", "--reject-failed-checks")
    assert fake.posts("/transition/") == []
    assert fake.posts("request-return") == [
        (
            "/api/v1/submissions/subA/request-return/",
            {
                "request_return_reasons": [
                    "You did not pass the comprehension (training) items at the start of the study."
                ]
            },
        )
    ]


def test_a_return_is_requested_once_and_a_failed_request_is_tried_again(batch, fake):
    """The submission stays "awaiting review" until the participant returns it: the next review must
    not ask again. A request Prolific did not take is asked again next time."""
    for pid, sid in ((A, "subA"), (B, "subB")):
        e = worker(batch, pid, session=sid, end=Enrolment.End.SCREENED_OUT, items=0)
        AnnotatorStanding.objects.create(
            batch=batch, annotator=e.user, training=AnnotatorStanding.Training.FAILED
        )
        fake.add(sid, pid)
    fake.fail("POST", r"/api/v1/submissions/subB/request-return/", 400)
    with pytest.raises(CommandError, match="run the same command again"):
        run(batch, "--approve", "--reject-failed-checks")
    assert [p for p, _ in fake.posts("request-return")] == [
        "/api/v1/submissions/subA/request-return/",
        "/api/v1/submissions/subB/request-return/",
    ]
    output = run(batch, "--approve", "--reject-failed-checks")
    assert [p for p, _ in fake.posts("request-return")][2:] == ["/api/v1/submissions/subB/request-return/"]
    assert "a return was requested before: waiting for it" in output
    run(batch, "--approve", "--reject-failed-checks")
    assert len(fake.posts("request-return")) == 3


def test_the_message_is_long_enough_whatever_the_names():
    assert len(rejection_message(("a", "b"), 2)) >= MIN_MESSAGE_CHARS


def test_a_refused_token_is_one_message_naming_the_setting(batch, fake, monkeypatch):
    import httpx

    from annotator.studies.prolific.client import ProlificClient

    monkeypatch.setattr(
        command,
        "client_factory",
        lambda: ProlificClient(
            token="wrong", base_url="https://prolific.test", transport=httpx.MockTransport(fake)
        ),
    )
    fake.add("subA", A)
    with pytest.raises(CommandError, match="PROLIFIC_API_TOKEN") as info:
        run(batch, "--approve")
    assert "wrong" not in str(info.value)
    assert len(fake.requests) == 1


def test_a_missing_token_names_the_setting(batch, settings):
    settings.PROLIFIC_API_TOKEN = ""
    with pytest.raises(CommandError, match="PROLIFIC_API_TOKEN is not set"):
        run(batch, "--approve")


@pytest.mark.parametrize(
    "args, message",
    [
        (("--bonus-per-item", "abc"), "not a number"),
        (("--bonus-per-item", "0"), "must be more than 0"),
        (("--bonus-per-item", "0.001"), "more than two decimals"),
        (("--bonus-per-item", "250"), "not pence"),
        (("--max-rejection-rate", "x"), "percentage"),
        (("--bonus-csv", "/nonexistent/bonus.csv"), "Cannot read"),
    ],
)
def test_bad_options_are_refused_before_anything_is_sent(batch, fake, args, message):
    with pytest.raises(CommandError, match=message):
        run(batch, *args)
    assert fake.requests == []


def test_bonus_csv_errors_name_the_row(batch, fake, tmp_path):
    path = tmp_path / "b.csv"
    path.write_text("participant_id,amount\n" + A + ",1.00\nnot an id,2\n" + B + ",-1\n")
    with pytest.raises(CommandError) as info:
        run(batch, "--bonus-csv", str(path))
    assert "row 3, column `participant_id`" in str(info.value) and "row 4, column `amount`" in str(info.value)
    assert fake.requests == []


def test_pages_of_submissions_are_all_read(batch):
    fake = Fake(page_size=2)
    for n in range(5):
        pid = f"{n}" * 24
        worker(batch, pid, session=f"s{n}")
        fake.add(f"s{n}", pid)
    with fake.client() as client:
        outcome = prolific_review_run(batch=batch, study_id=STUDY, client=client, approve=True)
    assert outcome.ok
    assert fake.posts("bulk-approve")[0][1]["submission_ids"] == [f"s{n}" for n in range(5)]


def test_a_bad_study_id_is_refused(batch):
    fake = Fake()
    from annotator.studies.prolific.services.review import ReviewError

    with fake.client() as client, pytest.raises(ReviewError):
        prolific_review_run(batch=batch, study_id="../x", client=client, bonus_per_item=Decimal("1"))
    assert fake.requests == []


def test_a_worker_whose_time_ran_out_unseen_is_timed_out_in_the_app_and_in_the_review(batch, fake):
    """Nobody came back for the end page, so no end is recorded; the app's clock says the time is up.
    The workers list and the review read the state from the same rows: timed out with nothing rated
    gets a return request (not "still working"), timed out after rating is approved."""
    from annotator.studies.prolific.services.review import TIME_UP_REASONS
    from annotator.studies.selectors import worker_progress

    batch.max_session_minutes = 30
    batch.save(update_fields=["max_session_minutes"])
    worker(batch, A, session="subA", end="", items=0, minutes=40)
    worker(batch, B, session="subB", end="", items=2, minutes=40)
    worker(batch, C, session="subC", end="", items=1, minutes=10)
    for sid, pid in (("subA", A), ("subB", B), ("subC", C)):
        fake.add(sid, pid)
    app = {p.enrolment.worker_id: p for p in worker_progress(batch=batch)}
    assert {pid: p.state for pid, p in app.items()} == {A: "timed out", B: "timed out", C: "working"}
    assert [pid for pid, p in app.items() if p.timed_out_unrated] == [A]
    held = run(batch, "--approve")
    assert f"hold     submission subA ({app[A].username}): timed out with 0 items rated" in held
    assert "did not earn the completion code (working)" in held and "still working" not in held
    assert fake.posts("request-return") == []
    run(batch, "--approve", "--reject-failed-checks")
    assert fake.posts("request-return") == [
        ("/api/v1/submissions/subA/request-return/", {"request_return_reasons": TIME_UP_REASONS})
    ]
    assert statuses(fake) == {A: "AWAITING REVIEW", B: "APPROVED", C: "AWAITING REVIEW"}


def test_a_failed_decision_does_not_keep_the_others_bonuses(batch, fake):
    """One submission's refused return request is reported; the approved worker is still paid, and
    the command exits non-zero so the researcher runs it again."""
    worker(batch, A, session="subA", items=3)
    e = worker(batch, B, session="subB", end=Enrolment.End.SCREENED_OUT, items=0)
    AnnotatorStanding.objects.create(
        batch=batch, annotator=e.user, training=AnnotatorStanding.Training.FAILED
    )
    fake.add("subA", A)
    fake.add("subB", B)
    fake.fail("POST", r"/api/v1/submissions/subB/request-return/", 400)
    out = StringIO()
    with pytest.raises(CommandError, match="run the same command again"):
        call_command(
            "prolific_review", batch.name, "--study-id", STUDY, "--approve", "--reject-failed-checks",
            "--bonus-per-item", "0.10", stdout=out,
        )  # fmt: skip
    assert "return of submission subB failed" in out.getvalue()
    assert statuses(fake)[A] == "APPROVED" and fake.paid == {A: [30]}
    run(batch, "--approve", "--reject-failed-checks", "--bonus-per-item", "0.10")
    assert fake.paid == {A: [30]} and len(fake.posts("request-return")) == 2
