"""One review of a Prolific study, as the command and the Studies page both run it."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from annotator.counted import counted
from annotator.models import Batch
from annotator.studies.prolific import client as api
from annotator.studies.prolific.services import bonus as ledger
from annotator.studies.prolific.services.review import (
    DEFAULT_MAX_REJECTION_RATE,
    ReviewError,
    bonus_targets,
    review_plan,
    review_send,
)


@dataclass(frozen=True)
class Outcome:
    lines: list[str]
    ok: bool  # everything asked for went through (a dry run: the plan was read)


def prolific_review_run(
    *,
    batch: Batch,
    study_id: str,
    client: api.ProlificClient,
    approve: bool = False,
    reject_failed_checks: bool = False,
    bonus_per_item: Decimal | None = None,
    bonus_rows: list[tuple[str, Decimal, str]] | None = None,
    dry_run: bool = False,
    max_rejection_rate: Decimal = DEFAULT_MAX_REJECTION_RATE,
) -> Outcome:
    """Review the study: decisions first, then bonuses. Raises ``ProlificAuthError`` on a refused
    token and ``ReviewError`` on a request that cannot be carried out (nothing sent in either case
    before the first write call)."""
    if bonus_per_item is not None and bonus_rows:
        raise ReviewError("Give either a bonus per item or a bonus file, not both.")
    review = review_plan(
        batch=batch,
        study_id=study_id,
        client=client,
        approve=approve,
        reject_failed_checks=reject_failed_checks,
        max_rejection_rate=max_rejection_rate,
        dry_run=dry_run,
    )
    review_send(review=review, client=client)
    n = len(review.decisions)
    submissions = counted(n, "submission", "submissions")
    lines = [
        f"Prolific study {review.study_id}: {submissions}; rejection rate "
        f"{review.rate(len(review.of('reject')))}% (cap {review.max_rate}%)."
    ] + review.lines
    ok = not review.failed
    if bonus_per_item is not None or bonus_rows:
        owed, skipped = bonus_targets(review=review, per_item=bonus_per_item, rows=bonus_rows)
        lines += skipped
        if dry_run:
            lines += ledger.bonus_preview(study_id=review.study_id, owed=owed) or ["no bonuses owed"]
        else:
            bonus_lines, paid = ledger.bonus_run(
                client=client, batch=batch, study_id=review.study_id, owed=owed
            )
            lines += bonus_lines
            ok = ok and paid
    return Outcome(lines=lines, ok=ok)
