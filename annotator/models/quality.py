"""Quality control: a batch's rules, its gold items, answers to them, and each annotator's standing.

Gold items are a table of their own, not items: they can never reach k, nor enter agreement,
HCS, system ranking or calibration, because none of those reads this table.
"""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from annotator.models.batch import Batch
from hcs import quality_rules as q


class QualityRule(models.Model):
    """A batch's quality-control settings (made with the defaults when first needed)."""

    batch = models.OneToOneField(Batch, on_delete=models.CASCADE, related_name="quality_rule")
    training_items = models.PositiveSmallIntegerField(
        default=0, help_text="Training items an annotator must do before rating (0 = no training)."
    )
    training_max_mae = models.FloatField(
        default=q.TRAINING_MAX_MAE,
        validators=[MinValueValidator(0)],
        help_text="Pass rule: mean absolute error over dimensions at most this, and every cap right.",
    )
    check_every = models.PositiveSmallIntegerField(
        default=10,
        validators=[MinValueValidator(2)],
        help_text="One item in this many is a gold check (when the batch has check items).",
    )
    check_warn_below = models.FloatField(
        default=q.CHECK_WARN_BELOW, validators=[MinValueValidator(0), MaxValueValidator(1)]
    )
    check_block_below = models.FloatField(
        default=q.CHECK_BLOCK_BELOW, validators=[MinValueValidator(0), MaxValueValidator(1)]
    )
    check_min_answered = models.PositiveSmallIntegerField(default=q.CHECK_MIN_ANSWERED)
    min_seconds = models.FloatField(default=q.MIN_SECONDS, validators=[MinValueValidator(0)])
    window = models.PositiveIntegerField(
        default=q.EVERY_N,
        validators=[MinValueValidator(1)],
        help_text="Agreement over time: submissions per window.",
    )

    def __str__(self) -> str:
        return f"quality rule of {self.batch}"


class GoldItem(models.Model):
    """An item with the expert's answer: for training (feedback shown) or a hidden check."""

    class Kind(models.TextChoices):
        TRAINING = "training", "Training"
        CHECK = "check", "Check"

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="gold_items")
    item_id = models.CharField(max_length=200)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    position = models.PositiveIntegerField(default=0)
    prompt = models.TextField()
    response = models.TextField()
    context = models.TextField(blank=True, default="")
    expected_output = models.TextField(blank=True, default="")
    constraints = models.JSONField(default=list, blank=True)
    conversation = models.JSONField(default=list, blank=True)
    system_id = models.CharField(max_length=200, blank=True, default="")
    metadata = models.JSONField(default=dict, blank=True)
    scores = models.JSONField(help_text="The expert's score per dimension.")
    flags = models.JSONField(null=True, blank=True, help_text="The expert's flags; null = flags not checked.")
    tolerance = models.PositiveSmallIntegerField(default=q.GOLD_TOLERANCE)
    explanation = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["batch", "kind", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["batch", "item_id"], name="gold_item_unique_in_batch"),
        ]

    def __str__(self) -> str:
        return f"{self.batch.name}/{self.item_id} ({self.kind})"


class GoldAnswer(models.Model):
    """An annotator's answer to a gold item; ``submitted_at`` is null while it is on their screen."""

    gold_item = models.ForeignKey(GoldItem, on_delete=models.CASCADE, related_name="answers")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="gold_answers"
    )
    shown_at = models.DateTimeField()
    submitted_at = models.DateTimeField(null=True, blank=True)
    scores = models.JSONField(default=dict, blank=True)
    flags = models.JSONField(default=list, blank=True)
    constraints_met = models.JSONField(default=list, blank=True)
    comment = models.TextField(blank=True, default="")
    skipped = models.BooleanField(default=False)
    passed = models.BooleanField(null=True, blank=True)
    mae = models.FloatField(null=True, blank=True)
    flags_right = models.BooleanField(null=True, blank=True)

    class Meta:
        ordering = ["shown_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["gold_item", "annotator"], name="gold_answer_once"),
        ]

    def __str__(self) -> str:
        return f"{self.gold_item} by {self.annotator}"


class AnnotatorStanding(models.Model):
    """One annotator in one batch: training outcome, check warnings, block, exclusion."""

    class Training(models.TextChoices):
        PENDING = "", "Not finished"
        PASSED = "passed", "Passed"
        FAILED = "failed", "Failed"

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="standings")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="standings"
    )
    training = models.CharField(max_length=10, choices=Training.choices, blank=True, default="")
    warned_at = models.DateTimeField(null=True, blank=True)
    blocked_at = models.DateTimeField(null=True, blank=True)
    screened_out_at = models.DateTimeField(null=True, blank=True)
    excluded = models.BooleanField(default=False)
    exclusion_rule = models.CharField(
        max_length=20, blank=True, default="", help_text="researcher or block rule"
    )
    exclusion_reason = models.TextField(blank=True, default="")
    excluded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    excluded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["batch", "annotator"], name="standing_once_per_batch"),
        ]

    def __str__(self) -> str:
        return f"{self.annotator} in {self.batch}"

    @property
    def allows_rating(self) -> bool:
        """The standing rule: quality control still lets the annotator rate in the batch (not
        excluded, blocked, screened out, nor failed training). Batch access is another rule
        (``annotator.rating.selectors.queue.batch_access_q``)."""
        return not (
            self.excluded or self.blocked_at or self.screened_out_at or self.training == self.Training.FAILED
        )


# The standing rule's other spellings, kept beside the property: ``not allows_rating`` as a Q and
# as SQL on a standing row aliased ``alias`` (tests/annotator/rating/test_rule_parity.py checks all three).
AnnotatorStanding.STOPPED = (
    Q(excluded=True)
    | Q(blocked_at__isnull=False)
    | Q(screened_out_at__isnull=False)
    | Q(training=AnnotatorStanding.Training.FAILED)
)


def standing_stopped_sql(alias: str) -> tuple[str, list]:
    """SQL true when the standing row ``alias`` stops the annotator rating, with its parameters."""
    return (
        f"({alias}.excluded OR {alias}.blocked_at IS NOT NULL OR {alias}.screened_out_at IS NOT NULL"
        f" OR {alias}.training = %s)",
        [AnnotatorStanding.Training.FAILED],
    )
