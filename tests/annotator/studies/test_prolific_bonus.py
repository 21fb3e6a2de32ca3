"""The bonus ledger pays every bonus exactly once: crashes between any two steps, lost answers,
network failures and any number of reruns never pay twice, and everything owed ends up paid."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from io import StringIO

import httpx
import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from annotator.management.commands import prolific_review as command
from annotator.models import ProlificBonus
from annotator.studies.prolific.services import bonus as ledger
from tests.annotator.studies.prolific_fake import STUDY, Fake, worker
from tests.factories import make_batch

pytestmark = pytest.mark.django_db

A, B = "a" * 24, "b" * 24
PAY = r"/api/v1/bulk-bonus-payments/[^/]+/pay/"
CREATE = "/api/v1/submissions/bonus-payments/"
Paid = ProlificBonus.State


class Crash(Exception):
    """The process dies here (not a network error: nothing catches it)."""


@pytest.fixture
def setup():
    batch = make_batch("bonus", n_items=6)
    fake = Fake()
    worker(batch, A, session="subA", items=3)
    worker(batch, B, session="subB", items=2)
    fake.add("subA", A, status="APPROVED")
    fake.add("subB", B, status="APPROVED")
    owed = [
        ledger.Owed(participant_id=A, submission_id="subA", reason="per-item", amount=Decimal("0.30")),
        ledger.Owed(participant_id=B, submission_id="subB", reason="per-item", amount=Decimal("0.20")),
    ]
    return batch, fake, owed


def pay(batch, fake, owed, *, now=None):
    with fake.client() as client:
        return ledger.bonus_run(client=client, batch=batch, study_id=STUDY, owed=owed, now=now)


def crash_once(monkeypatch, name):
    real = getattr(ledger, name)
    calls = {"n": 0}

    def crashing(**kwargs):
        calls["n"] += 1
        if calls["n"] == 1:
            raise Crash(name)
        return real(**kwargs)

    monkeypatch.setattr(ledger, name, crashing)


def assert_paid_exactly_once(fake):
    assert fake.paid == {A: [30], B: [20]}
    assert set(ProlificBonus.objects.values_list("state", flat=True)) == {Paid.PAID}
    assert sum(b["paid"] for b in fake.bulks.values()) == 1


def test_paid_once_and_reruns_pay_nothing(setup):
    batch, fake, owed = setup
    lines, ok = pay(batch, fake, owed)
    assert ok, lines
    assert_paid_exactly_once(fake)
    assert fake.posts(CREATE)[0][1] == {"study_id": STUDY, "csv_bonuses": f"{A},0.30\n{B},0.20"}
    for _ in range(3):
        assert pay(batch, fake, owed)[1]
    assert_paid_exactly_once(fake)
    assert len(fake.posts(CREATE)) == 1


# Each crash point lies between two steps: planned | create call | created | paying | pay call | paid.
CRASHES = {
    "after planned, before the set-up call": lambda mp, fake: fake.fail("POST", CREATE, Crash("create")),
    "after the set-up call, before created": lambda mp, fake: crash_once(mp, "bonus_mark_created"),
    "after created, before paying": lambda mp, fake: crash_once(mp, "bonus_mark_paying"),
    "after paying, before the pay call": lambda mp, fake: fake.fail("POST", PAY, Crash("pay")),
    "after the pay call, before paid": lambda mp, fake: crash_once(mp, "bonus_mark_paid"),
}


@pytest.mark.parametrize("where", CRASHES)
def test_a_crash_between_any_two_steps_never_pays_twice(setup, monkeypatch, where):
    batch, fake, owed = setup
    CRASHES[where](monkeypatch, fake)
    with pytest.raises(Crash):
        pay(batch, fake, owed)
    assert all(len(v) <= 1 for v in fake.paid.values())
    # Rerun any number of times, now and after the settling time: everything is paid, once.
    later = timezone.now() + timedelta(minutes=ledger.SETTLE_MINUTES + 1)
    for now in (None, None, later, later, later + timedelta(hours=1)):
        pay(batch, fake, owed, now=now)
        assert all(len(v) <= 1 for v in fake.paid.values())
    assert_paid_exactly_once(fake)


def test_an_interrupted_pay_is_not_paid_again_before_prolific_could_show_it(setup):
    batch, fake, owed = setup
    fake.fail("POST", PAY, Crash("pay"))
    with pytest.raises(Crash):
        pay(batch, fake, owed)
    lines, ok = pay(batch, fake, owed)
    assert not ok and fake.paid == {}
    assert "not paid again" in " ".join(lines)
    assert set(ProlificBonus.objects.values_list("state", flat=True)) == {Paid.PAYING}


def test_a_network_failure_on_pay_leaves_the_ledger_saying_paying(setup):
    batch, fake, owed = setup
    fake.fail("POST", PAY, httpx.ConnectError("down"))
    lines, ok = pay(batch, fake, owed)
    assert not ok and fake.paid == {}
    rows = list(ProlificBonus.objects.all())
    assert {r.state for r in rows} == {Paid.PAYING} and all(r.bulk_id == "bulk0001" for r in rows)
    assert "without a definite answer" in rows[0].note


def test_a_lost_answer_to_a_pay_that_went_through_is_read_back_not_paid_again(setup):
    batch, fake, owed = setup
    fake.fail("POST", PAY, (503, True))  # Prolific paid, then the answer was a 503
    lines, ok = pay(batch, fake, owed)
    assert not ok
    assert fake.bulks["bulk0001"]["paid"] == 1  # a 5xx on the pay call is never retried
    assert pay(batch, fake, owed)[1]
    assert_paid_exactly_once(fake)
    assert "read back from Prolific" in ProlificBonus.objects.first().note


def test_a_refused_pay_is_recorded_unpaid_and_paid_on_the_next_run(setup):
    batch, fake, owed = setup
    fake.fail("POST", PAY, 400)
    lines, ok = pay(batch, fake, owed)
    assert not ok and fake.paid == {}
    assert set(ProlificBonus.objects.values_list("state", flat=True)) == {Paid.CREATED}
    assert pay(batch, fake, owed)[1]
    assert_paid_exactly_once(fake)


def test_rate_limits_and_server_errors_are_retried_where_safe(setup):
    batch, fake, owed = setup
    fake.fail("POST", CREATE, 503, 429)  # set-up pays nothing: retried on both
    fake.fail("POST", PAY, 429)  # a 429 was not processed: retried
    lines, ok = pay(batch, fake, owed)
    assert ok, lines
    assert_paid_exactly_once(fake)


def test_a_failed_set_up_leaves_the_bonuses_planned(setup):
    batch, fake, owed = setup
    fake.fail("POST", CREATE, *([500] * 5))
    lines, ok = pay(batch, fake, owed)
    assert not ok and fake.bulks == {}
    assert set(ProlificBonus.objects.values_list("state", flat=True)) == {Paid.PLANNED}
    assert pay(batch, fake, owed)[1]
    assert_paid_exactly_once(fake)


def test_a_different_amount_for_a_bonus_already_in_the_ledger_is_not_paid_on_top(setup):
    batch, fake, owed = setup
    pay(batch, fake, owed)
    more = [ledger.Owed(participant_id=A, submission_id="subA", reason="per-item", amount=Decimal("0.90"))]
    lines, _ok = pay(batch, fake, more)
    assert "already in the ledger at 0.30" in " ".join(lines)
    assert fake.paid[A] == [30]


def test_the_command_reruns_pay_nothing_twice(setup, monkeypatch, tmp_path):
    batch, fake, _owed = setup
    monkeypatch.setattr(command, "client_factory", fake.client)
    fake.submissions["subA"]["status"] = fake.submissions["subB"]["status"] = "AWAITING REVIEW"
    for _ in range(3):
        call_command(
            "prolific_review",
            batch.name,
            "--study-id",
            STUDY,
            "--approve",
            "--bonus-per-item",
            "0.10",
            stdout=StringIO(),
        )
    assert_paid_exactly_once(fake)
    bonus_file = tmp_path / "extra.csv"
    bonus_file.write_text(f"participant_id,amount,reason\n{A},1.50,best rater\n{'c' * 24},2.00,best rater\n")
    out = StringIO()
    for _ in range(2):
        call_command(
            "prolific_review", batch.name, "--study-id", STUDY, "--bonus-csv", str(bonus_file), stdout=out
        )
    assert fake.paid[A] == [30, 150] and "c" * 24 not in fake.paid
    assert "no submission of theirs in this study matches" in out.getvalue()


def test_the_command_fails_loudly_when_a_bonus_is_left_unsettled(setup, monkeypatch):
    batch, fake, _owed = setup
    monkeypatch.setattr(command, "client_factory", fake.client)
    fake.fail("POST", PAY, httpx.ReadTimeout("slow"))
    with pytest.raises(CommandError, match="run the same command again"):
        call_command(
            "prolific_review", batch.name, "--study-id", STUDY, "--bonus-per-item", "0.10", stdout=StringIO()
        )


@pytest.mark.django_db(transaction=True)
def test_two_runs_at_once_pay_once():
    import threading

    from django.db import connection

    batch = make_batch("race", n_items=4)
    fake = Fake()
    worker(batch, A, session="subA", items=3)
    fake.add("subA", A, status="APPROVED")
    owed = [ledger.Owed(participant_id=A, submission_id="subA", reason="per-item", amount=Decimal("0.30"))]
    barrier, errors = threading.Barrier(2), []

    def one_run():
        try:
            barrier.wait()
            pay(batch, fake, owed)
        except Exception as exc:  # noqa: BLE001 - reported below; a locked SQLite writer may give up
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=one_run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    pay(batch, fake, owed)  # whatever the race left, a rerun settles it
    assert fake.paid == {A: [30]}, errors
    assert ProlificBonus.objects.get().state == Paid.PAID


def test_a_dry_run_after_paying_says_the_ledger_has_it(setup, monkeypatch):
    batch, fake, _owed = setup
    monkeypatch.setattr(command, "client_factory", fake.client)
    fake.submissions["subA"]["status"] = "AWAITING REVIEW"
    args = ("prolific_review", batch.name, "--study-id", STUDY, "--approve", "--bonus-per-item", "0.10")
    call_command(*args, stdout=StringIO())
    out = StringIO()
    call_command(*args, "--dry-run", stdout=out)
    assert f"bonus per-item for {A} is already in the ledger: 0.30 paid; not paid again" in out.getvalue()
    assert fake.paid == {A: [30], B: [20]}


@pytest.mark.parametrize("answer", [404, 503], ids=["refused", "unavailable"])
def test_a_failed_read_back_is_reported_and_the_rest_of_the_study_goes_on(setup, monkeypatch, answer):
    """A pay call killed midway leaves its bonuses *paying*. When reading those submissions back
    fails, the rerun says which submission and why, leaves them *paying* (never paid blindly), still
    approves and pays everyone else, and exits non-zero; a later rerun settles them, paying nothing twice."""
    from annotator.models import Enrolment

    batch, fake, _owed = setup
    monkeypatch.setattr(command, "client_factory", fake.client)
    C = "c" * 24
    late = worker(batch, C, session="subC", items=1, end="")
    fake.add("subC", C)
    args = ("prolific_review", batch.name, "--study-id", STUDY, "--approve", "--bonus-per-item", "0.10")
    crash_once(monkeypatch, "bonus_mark_paid")
    with pytest.raises(Crash):
        call_command(*args, stdout=StringIO())
    assert fake.paid == {A: [30], B: [20]}
    assert set(ProlificBonus.objects.values_list("state", flat=True)) == {Paid.PAYING}
    Enrolment.objects.filter(pk=late.pk).update(end=Enrolment.End.DONE, ended_at=timezone.now())
    fake.fail("GET", r"/api/v1/submissions/sub[AB]/", *([answer] * 20))
    out = StringIO()
    with pytest.raises(CommandError, match="run the same command again"):
        call_command(*args, stdout=out)
    assert f"Reading back submission subA (bonus per-item for {A}, bulk bonus payment bulk0001) failed" in (
        out.getvalue()
    )
    assert "Bulk bonus payment bulk0001: could not be read back" in out.getvalue()
    assert fake.submissions["subC"]["status"] == "APPROVED"
    assert fake.paid == {A: [30], B: [20], C: [10]}
    assert ProlificBonus.objects.get(participant_id=A).state == Paid.PAYING
    fake.failures.clear()
    call_command(*args, stdout=StringIO())
    assert fake.paid == {A: [30], B: [20], C: [10]}
    assert set(ProlificBonus.objects.values_list("state", flat=True)) == {Paid.PAID}
