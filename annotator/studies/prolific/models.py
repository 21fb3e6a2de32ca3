"""What the app keeps of its dealings with Prolific: the bonus ledger and the webhook events seen.

Both keep app label ``annotator`` (imported by ``annotator.models``), like the other study models.
"""

from __future__ import annotations

from django.db import models

from annotator.models.batch import Batch


class ProlificBonus(models.Model):
    """One bonus owed to one participant of one Prolific study for one reason.

    The state moves planned → created (Prolific's bulk bonus payment id kept) → paying (written
    just before the pay call) → paid. A row left in *paying* means the pay call may or may not
    have reached Prolific: it is settled by reading the submission back, never by paying again.
    """

    class State(models.TextChoices):
        PLANNED = "planned", "Planned"
        CREATED = "created", "Created on Prolific"
        PAYING = "paying", "Pay call sent, outcome not yet known"
        PAID = "paid", "Paid"

    batch = models.ForeignKey(Batch, null=True, on_delete=models.SET_NULL, related_name="+")
    study_id = models.CharField(max_length=100)
    participant_id = models.CharField(max_length=100)
    submission_id = models.CharField(max_length=100, blank=True, default="")
    reason = models.CharField(max_length=100)
    amount = models.DecimalField(max_digits=8, decimal_places=2)
    state = models.CharField(max_length=10, choices=State.choices, default=State.PLANNED)
    bulk_id = models.CharField(max_length=100, blank=True, default="")  # Prolific's bulk bonus payment id
    paying_since = models.DateTimeField(null=True, blank=True)
    paid_at = models.DateTimeField(null=True, blank=True)
    note = models.TextField(blank=True, default="")  # the last thing that happened to it, for the researcher
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "Prolific bonus"
        verbose_name_plural = "Prolific bonuses"
        ordering = ("study_id", "participant_id", "reason")
        constraints = (
            models.UniqueConstraint(
                fields=["study_id", "participant_id", "reason"], name="prolific_bonus_once"
            ),
        )

    def __str__(self) -> str:
        return f"bonus {self.amount} for {self.reason} in study {self.study_id} ({self.state})"

    @property
    def amount_minor(self) -> int:
        """The amount in pence or cents, as Prolific reports bonus payments on a submission."""
        return int(self.amount * 100)


class ProlificWebhookEvent(models.Model):
    """A webhook delivery already handled; the same event id is answered again without acting."""

    event_id = models.CharField(max_length=100, unique=True)
    event_type = models.CharField(max_length=100)
    resource_id = models.CharField(max_length=100, blank=True, default="")
    status = models.CharField(max_length=40, blank=True, default="")
    leases_released = models.PositiveIntegerField(default=0)
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("-received_at",)

    def __str__(self) -> str:
        return f"{self.event_type} {self.resource_id} {self.status}"


class ProlificReturnRequest(models.Model):
    """A return request Prolific accepted for one submission. The submission stays "awaiting review"
    until the participant returns it, so the next review sees it again: it is not asked twice."""

    study_id = models.CharField(max_length=100)
    submission_id = models.CharField(max_length=100, unique=True)
    requested_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("-requested_at",)

    def __str__(self) -> str:
        return f"return requested for submission {self.submission_id} of study {self.study_id}"
