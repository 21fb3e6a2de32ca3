"""The bonus ledger: every bonus is paid exactly once, whatever crashes or fails on the way.

Prolific pays a bonus in two calls: set up a bulk bonus payment (pays nothing), then pay it (not
idempotent: a second pay call pays again). Each ledger row moves planned → created → paying → paid,
and each state is committed before the call that depends on it:

- *planned* is written before the set-up call. A crash after the set-up call leaves the row
  planned; the next run sets up a new bulk payment, and the unrecorded one is never paid.
- *created* (with Prolific's id) is written after the set-up call, before anything is paid.
- *paying* is written before the pay call. A row found *paying* is never paid again blindly: the
  participant's submission is read back (its ``bonus_payments``). Seen paid → *paid*. Not seen,
  and the pay call is older than :data:`SETTLE_MINUTES` (Prolific pays asynchronously) → back to
  *created*, to be paid. Otherwise it waits for a later run.
- *paid* is written after the pay call answers.

A pay call that fails without a definite answer (network, 5xx) leaves the row *paying*: the ledger
then says exactly what is known. A definite refusal (4xx) puts it back to *created*.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from django.db import transaction
from django.utils import timezone

from annotator.models import Batch, ProlificBonus
from annotator.studies.prolific import client as api

State = ProlificBonus.State
SETTLE_MINUTES = 60


@dataclass(frozen=True)
class Owed:
    participant_id: str
    submission_id: str
    reason: str
    amount: Decimal


@transaction.atomic
def bonus_plan(*, batch: Batch, study_id: str, owed: list[Owed]) -> tuple[list[ProlificBonus], list[str]]:
    """Write a planned row per new (study, participant, reason); rows already in the ledger are kept
    as they are (a different amount is reported, never paid on top)."""
    notes = []
    existing = {
        (b.participant_id, b.reason): b
        for b in ProlificBonus.objects.select_for_update().filter(
            study_id=study_id, participant_id__in=[o.participant_id for o in owed]
        )
    }
    rows = []
    for o in owed:
        row = existing.get((o.participant_id, o.reason))
        if row is None:
            # get_or_create: a run planning the same bonus at this moment made the row first.
            row, _ = ProlificBonus.objects.get_or_create(
                study_id=study_id,
                participant_id=o.participant_id,
                reason=o.reason,
                defaults={"batch": batch, "submission_id": o.submission_id, "amount": o.amount},
            )
        if row.amount != o.amount:
            notes.append(
                f"bonus {o.reason} for {o.participant_id} is already in the ledger at {row.amount} "
                f"({row.state}); {o.amount} was not added"
            )
        rows.append(row)
    return rows, notes


def bonus_preview(*, study_id: str, owed: list[Owed]) -> list[str]:
    """What a run would do with each owed bonus, read from the ledger (a dry run writes nothing)."""
    known = {
        (b.participant_id, b.reason): b
        for b in ProlificBonus.objects.filter(
            study_id=study_id, participant_id__in=[o.participant_id for o in owed]
        )
    }
    lines = []
    for o in owed:
        row = known.get((o.participant_id, o.reason))
        if row is None:
            lines.append(f"would pay bonus {o.reason} {o.amount:.2f} to {o.participant_id}")
        else:
            lines.append(
                f"bonus {o.reason} for {o.participant_id} is already in the ledger: {row.amount} "
                f"{row.get_state_display().lower()}; not paid again"
            )
    return lines


@transaction.atomic
def bonus_mark_created(*, rows: list[ProlificBonus], bulk_id: str) -> int:
    return ProlificBonus.objects.filter(pk__in=[r.pk for r in rows], state=State.PLANNED).update(
        state=State.CREATED, bulk_id=bulk_id, note=""
    )


@transaction.atomic
def bonus_mark_paying(*, bulk_id: str, now: datetime) -> int:
    """Claim a created bulk payment for paying; 0 when another run claimed it first."""
    return ProlificBonus.objects.filter(bulk_id=bulk_id, state=State.CREATED).update(
        state=State.PAYING, paying_since=now, note=""
    )


@transaction.atomic
def bonus_mark_paid(*, bulk_id: str, now: datetime, note: str = "") -> int:
    return ProlificBonus.objects.filter(bulk_id=bulk_id, state=State.PAYING).update(
        state=State.PAID, paid_at=now, note=note
    )


@transaction.atomic
def bonus_mark_unpaid(*, bulk_id: str, note: str) -> int:
    """Prolific definitely did not pay this bulk payment: it may be paid again."""
    return ProlificBonus.objects.filter(bulk_id=bulk_id, state=State.PAYING).update(
        state=State.CREATED, paying_since=None, note=note[:2000]
    )


@transaction.atomic
def bonus_note(*, bulk_id: str, note: str) -> None:
    ProlificBonus.objects.filter(bulk_id=bulk_id).exclude(state=State.PAID).update(note=note[:2000])


def _seen_paid(client: api.ProlificClient, row: ProlificBonus) -> bool | None:
    """Whether the submission shows this bonus among its bonus payments (None: cannot tell)."""
    if not row.submission_id:
        return None
    payments = client.submission(row.submission_id).get("bonus_payments")
    if not isinstance(payments, list):
        return None
    # Bonuses of the same amount this ledger already paid the participant are on the list too.
    already = sum(
        b.amount_minor == row.amount_minor
        for b in ProlificBonus.objects.filter(
            study_id=row.study_id, participant_id=row.participant_id, state=State.PAID
        )
    )
    return [p for p in payments if isinstance(p, int)].count(row.amount_minor) > already


def _read_back(client: api.ProlificClient, row: ProlificBonus, lines: list[str]) -> bool | None:
    """``_seen_paid``, with a failed read of one submission reported and taken as "cannot tell":
    the row stays *paying* (never paid blindly) and the rest of the study is still reviewed."""
    try:
        return _seen_paid(client, row)
    except api.ProlificAuthError:
        raise
    except api.ProlificError as exc:
        lines.append(
            f"Reading back submission {row.submission_id} (bonus {row.reason} for {row.participant_id}, "
            f"bulk bonus payment {row.bulk_id}) failed: {exc}"
        )
        return None


def _settle(client: api.ProlificClient, study_id: str, now: datetime, lines: list[str]) -> None:
    """Read back every bulk payment whose pay call may or may not have gone through."""
    bulks = defaultdict(list)
    for row in ProlificBonus.objects.filter(study_id=study_id, state=State.PAYING):
        bulks[row.bulk_id].append(row)
    for bulk_id, rows in bulks.items():
        seen = [_read_back(client, r, lines) for r in rows]
        if any(s is True for s in seen):  # one bulk payment is paid as a whole
            n = bonus_mark_paid(
                bulk_id=bulk_id, now=now, note="paid (read back from Prolific after an interruption)"
            )
            lines.append(f"Bulk bonus payment {bulk_id}: read back as paid ({n} bonus(es)); not paid again.")
        elif all(s is False for s in seen) and min(r.paying_since for r in rows) <= now - timedelta(
            minutes=SETTLE_MINUTES
        ):
            bonus_mark_unpaid(bulk_id=bulk_id, note="read back as not paid; paying it now")
            lines.append(
                f"Bulk bonus payment {bulk_id}: read back as not paid {SETTLE_MINUTES} minutes after the "
                "pay call; paying it."
            )
        elif any(s is None for s in seen):
            bonus_note(bulk_id=bulk_id, note="pay call sent; could not be read back from Prolific")
            lines.append(
                f"Bulk bonus payment {bulk_id}: could not be read back, so whether it was paid is not known; "
                "not paid again. Run again to read it back, or check the study's bonuses on Prolific."
            )
        else:
            bonus_note(bulk_id=bulk_id, note="pay call sent; outcome not yet visible on Prolific")
            lines.append(
                f"Bulk bonus payment {bulk_id}: the pay call may have gone through and Prolific does not "
                f"show it yet; not paid again. Run again after {SETTLE_MINUTES} minutes, or check the "
                "study's bonuses on Prolific."
            )


def bonus_run(
    *, client: api.ProlificClient, batch: Batch, study_id: str, owed: list[Owed], now: datetime | None = None
) -> tuple[list[str], bool]:
    """Plan, set up and pay the owed bonuses, settling earlier interrupted ones first.
    Returns the lines to show and whether everything owed is now paid."""
    now = now or timezone.now()
    lines: list[str] = []
    _settle(client, study_id, now, lines)
    _rows, notes = bonus_plan(batch=batch, study_id=study_id, owed=owed)
    lines += notes
    planned = list(ProlificBonus.objects.filter(study_id=study_id, state=State.PLANNED).order_by("pk"))
    if planned:
        csv_bonuses = "\n".join(f"{r.participant_id},{r.amount:.2f}" for r in planned)
        try:
            created = client.bonus_create(study_id=study_id, csv_bonuses=csv_bonuses)
        except api.ProlificAuthError:
            raise
        except api.ProlificError as exc:
            lines.append(
                f"Setting up {len(planned)} bonus(es) failed; they stay planned and nothing was paid: {exc}"
            )
            return lines, False
        bulk_id = str(created.get("id") or "")
        if not bulk_id:
            lines.append(
                "Prolific set up the bonuses without giving an id; they stay planned and nothing was paid."
            )
            return lines, False
        bonus_mark_created(rows=planned, bulk_id=bulk_id)
        lines.append(f"Set up bulk bonus payment {bulk_id} for {len(planned)} bonus(es).")
    ok = True
    for bulk_id in (
        ProlificBonus.objects.filter(study_id=study_id, state=State.CREATED)
        .order_by("bulk_id")
        .values_list("bulk_id", flat=True)
        .distinct()
    ):
        if not bonus_mark_paying(bulk_id=bulk_id, now=now):
            continue
        try:
            client.bonus_pay(bulk_id)
        except api.ProlificUnavailable as exc:
            ok = False
            bonus_note(bulk_id=bulk_id, note=f"pay call without a definite answer: {exc}")
            lines.append(
                f"Paying bulk bonus payment {bulk_id} got no definite answer ({exc}). It is recorded as "
                "'paying' and will be read back, never paid blindly again."
            )
            continue
        except api.ProlificAuthError:
            bonus_mark_unpaid(bulk_id=bulk_id, note="the token was refused; nothing was paid")
            raise
        except api.ProlificError as exc:
            ok = False
            bonus_mark_unpaid(bulk_id=bulk_id, note=f"Prolific refused the payment: {exc}")
            lines.append(f"Prolific refused to pay bulk bonus payment {bulk_id}: {exc}. Nothing was paid.")
            continue
        n = bonus_mark_paid(bulk_id=bulk_id, now=timezone.now())
        lines.append(f"Paid bulk bonus payment {bulk_id}: {n} bonus(es).")
    left = ProlificBonus.objects.filter(study_id=study_id).exclude(state=State.PAID).count()
    return lines, ok and left == 0
