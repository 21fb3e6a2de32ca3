"""Review a Prolific study against a batch: who to approve, reject or ask to return, then bonuses.

Only submissions that match a worker of the batch through the study binding are ever acted on:
the participant id, the study id the worker arrived with, and (where the app kept one) the
session id, which on Prolific is the submission id. Everyone else is listed and left alone.

Rejections follow Prolific's rules: only with ``reject_failed_checks``, only for two or more failed
attention checks by a worker whose session ran longer than five minutes, with a category and a
message of at least 100 characters naming the failed checks, and never past the rejection-rate
cap. Failed training (comprehension) gets a return request instead, and so does a worker whose time ran
out before they rated any item (no completion code was shown to them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from django.utils.translation import ngettext

from annotator.counted import counted
from annotator.models import Batch, ProlificReturnRequest
from annotator.studies.prolific import client as api
from annotator.studies.prolific.selectors import WorkerFacts, prolific_workers
from annotator.studies.prolific.services import bonus as ledger

AWAITING = "AWAITING REVIEW"
DECIDED = ("APPROVED", "REJECTED", AWAITING)  # the submissions a rejection rate is counted over
MIN_FAILED_CHECKS = 2
MIN_STUDY_MINUTES = 5
MIN_MESSAGE_CHARS = 100
REJECTION_CATEGORY = "FAILED_CHECK"
DEFAULT_MAX_REJECTION_RATE = Decimal("10")  # percent of decided submissions
RETURN_REASONS = ["You did not pass the comprehension (training) items at the start of the study."]
TIME_UP_REASONS = [
    "Your session's time limit ran out before you rated any item, so there is no completion code "
    "for this study."
]
PER_ITEM_REASON = "per-item"


class ReviewError(ValueError):
    """The request cannot be carried out as given; nothing was sent. The message is for the user."""


@dataclass(frozen=True)
class Decision:
    submission: api.Submission
    action: str  # approve, reject, return, hold (left for the researcher), none (nothing to do)
    why: str
    facts: WorkerFacts | None = None
    message: str = ""
    return_reasons: tuple[str, ...] = ()  # what a return request tells the participant

    def line(self) -> str:
        who = self.facts.enrolment.user.get_username() if self.facts else "(not in this batch)"
        return f"{self.action:8} submission {self.submission.id} ({who}): {self.why}"


@dataclass
class Review:
    study_id: str
    decisions: list[Decision]
    rejected_before: int
    decided_total: int
    max_rate: Decimal
    dry_run: bool
    lines: list[str] = field(default_factory=list)
    failed_ids: set[str] = field(default_factory=set)  # submissions whose decision did not go through

    @property
    def failed(self) -> bool:
        """Something did not go through; the lines say what."""
        return bool(self.failed_ids)

    def of(self, action: str) -> list[Decision]:
        return [d for d in self.decisions if d.action == action]

    def rate(self, extra: int = 0) -> Decimal:
        if not self.decided_total:
            return Decimal(0)
        return (Decimal(100) * (self.rejected_before + extra) / self.decided_total).quantize(Decimal("0.1"))


def rejection_message(failed: tuple[str, ...], answered: int) -> str:
    """The message Prolific shows the participant: the failed checks by name, at least 100 characters."""
    names = ", ".join(failed)
    text = (
        f"You failed {len(failed)} of the {answered} attention checks in this study (check items: {names}). "
        "Each check had one answer the instructions asked for; Prolific allows a rejection after two or "
        "more failed attention checks in a study longer than five minutes."
    )
    assert len(text) >= MIN_MESSAGE_CHARS  # noqa: S101 - the fixed text alone is longer
    return text


def _match(sub: api.Submission, facts: WorkerFacts | None, study_id: str) -> str:
    """Why the submission does not belong to this worker, or '' when it does."""
    if facts is None:
        return "no worker of this batch has this participant id"
    e = facts.enrolment
    if e.platform_study_id and e.platform_study_id != study_id:
        return f"the worker came from another Prolific study ({e.platform_study_id})"
    if facts.sessions and sub.id not in facts.sessions:
        return "the submission id is not the session the worker came with"
    return ""


def _decide(
    sub: api.Submission,
    facts: WorkerFacts | None,
    *,
    study_id: str,
    approve: bool,
    reject_failed_checks: bool,
    returns_asked: frozenset[str] = frozenset(),
) -> Decision:
    mismatch = _match(sub, facts, study_id)
    if mismatch:
        return Decision(sub, "hold", mismatch, None)
    if sub.status != AWAITING:
        return Decision(sub, "none", f"already {sub.status.lower()} on Prolific", facts)
    failed = facts.failed_checks
    if facts.failed_training:
        if sub.id in returns_asked:
            return Decision(
                sub, "none", "failed the training items; a return was requested before: waiting for it", facts
            )
        if reject_failed_checks:
            return Decision(
                sub,
                "return",
                "failed the training (comprehension) items: a return request",
                facts,
                return_reasons=tuple(RETURN_REASONS),
            )
        return Decision(
            sub, "hold", "failed the training items (--reject-failed-checks asks them to return)", facts
        )
    if len(failed) >= MIN_FAILED_CHECKS:
        if not reject_failed_checks:
            return Decision(
                sub,
                "hold",
                f"failed {len(failed)} attention checks; decide by hand or use --reject-failed-checks",
                facts,
            )
        if facts.minutes_worked <= MIN_STUDY_MINUTES:
            return Decision(
                sub,
                "hold",
                f"failed {len(failed)} attention checks, but the session lasted "
                f"{facts.minutes_worked:.1f} minutes (rejection needs more than "
                f"{MIN_STUDY_MINUTES})",
                facts,
            )
        return Decision(
            sub,
            "reject",
            f"failed {len(failed)} attention checks ({', '.join(failed)})",
            facts,
            message=rejection_message(failed, facts.answered_checks),
        )
    if facts.excluded:
        return Decision(sub, "hold", "excluded by quality control: decide by hand", facts)
    if facts.timed_out_unrated:
        # No code was shown, so nothing is approved; like a training failure they are asked to return.
        why = "timed out with 0 items rated: no completion code"
        if sub.id in returns_asked:
            return Decision(sub, "none", f"{why}; a return was requested before: waiting for it", facts)
        if reject_failed_checks:
            return Decision(
                sub, "return", f"{why}: a return request", facts, return_reasons=tuple(TIME_UP_REASONS)
            )
        return Decision(sub, "hold", f"{why} (--reject-failed-checks asks them to return)", facts)
    if not facts.earned_code:
        return Decision(sub, "hold", f"did not earn the completion code ({facts.state})", facts)
    if not approve:
        return Decision(sub, "hold", "earned the completion code (--approve approves)", facts)
    return Decision(
        sub, "approve", f"earned the completion code ({counted(facts.items_done, 'item', 'items')})", facts
    )


def review_plan(
    *,
    batch: Batch,
    study_id: str,
    client: api.ProlificClient,
    approve: bool = False,
    reject_failed_checks: bool = False,
    max_rejection_rate: Decimal = DEFAULT_MAX_REJECTION_RATE,
    dry_run: bool = False,
) -> Review:
    """Read the study's submissions (GETs only) and decide each; the rejection cap is applied here."""
    study_id = study_id.strip()
    if not study_id or "/" in study_id or len(study_id) > 100:
        raise ReviewError(
            "--study-id must be the Prolific study id (letters and digits), as in the study's URL."
        )
    if not Decimal(0) <= max_rejection_rate <= Decimal(100):
        raise ReviewError("The rejection-rate cap is a percentage from 0 to 100.")
    submissions = client.study_submissions(study_id)
    workers = prolific_workers(batch=batch)
    review = Review(
        study_id=study_id,
        decisions=[],
        dry_run=dry_run,
        max_rate=max_rejection_rate,
        rejected_before=sum(s.status == "REJECTED" for s in submissions),
        decided_total=sum(s.status in DECIDED for s in submissions),
    )
    returns_asked = frozenset(
        ProlificReturnRequest.objects.filter(submission_id__in=[s.id for s in submissions]).values_list(
            "submission_id", flat=True
        )
    )
    rejections = 0
    for sub in submissions:
        decision = _decide(
            sub,
            workers.get(sub.participant_id),
            study_id=study_id,
            approve=approve,
            reject_failed_checks=reject_failed_checks,
            returns_asked=returns_asked,
        )
        if decision.action == "reject":
            if review.rate(rejections + 1) > max_rejection_rate:
                decision = Decision(
                    sub,
                    "hold",
                    f"{decision.why}; not rejected: the rejection rate would pass "
                    f"the cap of {max_rejection_rate}%",
                    decision.facts,
                )
            else:
                rejections += 1
                decision = Decision(
                    sub,
                    "reject",
                    f"{decision.why}; running rejection rate "
                    f"{review.rate(rejections)}% (cap {max_rejection_rate}%)",
                    decision.facts,
                    decision.message,
                )
        review.decisions.append(decision)
    return review


def _submissions(singular: str, plural: str, ids: list) -> str:
    return ngettext(singular, plural, len(ids)) % {"n": len(ids)}


def review_send(*, review: Review, client: api.ProlificClient) -> Review:
    """Send the approvals (one bulk call), rejections and return requests. A 401 stops at once; any
    other failure is written in the review's lines and the rest still goes."""
    for decision in review.decisions:
        review.lines.append(("would " if review.dry_run else "") + decision.line())
    if review.dry_run:
        return review
    approvals = [d.submission.id for d in review.of("approve")]
    if approvals:
        try:
            client.bulk_approve(study_id=review.study_id, submission_ids=approvals)
            review.lines.append(
                _submissions("Approved %(n)d submission.", "Approved %(n)d submissions.", approvals)
            )
        except api.ProlificAuthError:
            raise
        except api.ProlificError as exc:
            review.failed_ids.update(approvals)
            failed = _submissions("Approval of %(n)d submission", "Approval of %(n)d submissions", approvals)
            review.lines.append(f"{failed} failed: {exc}")
    for decision in review.of("reject"):
        _send_one(
            review,
            decision,
            lambda d: client.transition(
                d.submission.id, action="REJECT", message=d.message, rejection_category=REJECTION_CATEGORY
            ),
        )
    for decision in review.of("return"):
        if _send_one(
            review, decision, lambda d: client.request_return(d.submission.id, reasons=list(d.return_reasons))
        ):
            ProlificReturnRequest.objects.get_or_create(
                submission_id=decision.submission.id, defaults={"study_id": review.study_id}
            )
    return review


def _send_one(review: Review, decision: Decision, call) -> bool:
    """Send one decision; True when Prolific accepted it."""
    try:
        call(decision)
    except api.ProlificAuthError:
        raise
    except api.ProlificError as exc:
        review.failed_ids.add(decision.submission.id)
        review.lines.append(f"{decision.action} of submission {decision.submission.id} failed: {exc}")
        return False
    review.lines.append(f"Sent: {decision.action} submission {decision.submission.id}.")
    return True


def bonus_targets(
    *, review: Review, per_item: Decimal | None = None, rows: list[tuple[str, Decimal, str]] | None = None
) -> tuple[list[ledger.Owed], list[str]]:
    """The bonuses owed: per item to every worker approved now or before (who earned the code and is
    not excluded), or the CSV's rows for participants with a matched submission in the study. A
    submission whose decision did not go through this time gets nothing until a run where it does."""
    owed, skipped = [], []
    matched = {d.submission.participant_id: d for d in review.decisions if d.facts is not None}

    def not_through(d: Decision) -> bool:
        if d.submission.id in review.failed_ids:
            skipped.append(
                f"skip bonus for {d.submission.participant_id}: the {d.action} of their submission did not "
                "go through; run again"
            )
            return True
        return False

    if per_item is not None:
        for d in matched.values():
            paid_for = d.action == "approve" or (d.action == "none" and d.submission.status == "APPROVED")
            if paid_for and d.facts.earned_code and not d.facts.excluded and d.facts.items_done:
                if not_through(d):
                    continue
                owed.append(
                    ledger.Owed(
                        participant_id=d.submission.participant_id,
                        submission_id=d.submission.id,
                        reason=PER_ITEM_REASON,
                        amount=per_item * d.facts.items_done,
                    )
                )
    for participant_id, amount, reason in rows or ():
        d = matched.get(participant_id)
        if d is None:
            skipped.append(
                f"skip bonus for {participant_id}: no submission of theirs in this study matches a worker "
                "of this batch"
            )
        elif d.action in ("reject", "return"):
            skipped.append(f"skip bonus for {participant_id}: their submission is being {d.action}ed")
        elif not not_through(d):
            owed.append(
                ledger.Owed(
                    participant_id=participant_id, submission_id=d.submission.id, reason=reason, amount=amount
                )
            )
    return owed, skipped
