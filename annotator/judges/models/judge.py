"""LLM judges and what they said, stored next to the human scores and never shown to annotators."""

from __future__ import annotations

from django.db import models
from django.db.models import F, Q
from django.utils import timezone

from annotator.models.batch import Item

OVERALL = "overall"
# A judge version's name: the judge's name, then this, the template version and a hash of the configuration
# ("NAME (template 2 #abcd1234)"); run_judge makes one when template text, model or parameters change.
VERSION_MARK = " (template "


class Judge(models.Model):
    """One judge configuration: a model behind a template of a given version."""

    name = models.CharField(max_length=200, unique=True)
    model = models.CharField(max_length=200, blank=True, default="", help_text="e.g. gpt-4o-2024-08-06")
    template = models.CharField(max_length=200, blank=True, default="", help_text="prompt template name")
    template_version = models.CharField(max_length=100, blank=True, default="")
    template_hash = models.CharField(
        max_length=64,
        blank=True,
        default="",
        help_text="sha256 of the template text run_judge used; changed text without a new version is a new judge",
    )
    params = models.JSONField(
        default=dict, blank=True, help_text="model parameters run_judge sent (never the key)"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # One run at a time per judge: a run claims the judge (a random token) and renews the claim while it
    # runs; a second run is refused before any call, unless the claim went stale (its process died).
    run_claim = models.CharField(max_length=32, blank=True, default="")
    run_claimed_at = models.DateTimeField(null=True, blank=True)
    # Who holds the claim, so a refused run can name it and a job failed for a dead worker can free it:
    # the process ("host:pid", as ``Job.worker``) and the job it runs (none: run_judge on the command line).
    run_claim_worker = models.CharField(max_length=300, blank=True, default="")
    run_claim_job = models.UUIDField(null=True, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def base_name(self) -> str:
        """The name shared by all versions of this judge."""
        return self.name.split(VERSION_MARK, 1)[0]


class JudgeScore(models.Model):
    """A judge's score of one item on one dimension (a rubric key or ``overall``)."""

    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="scores")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="judge_scores")
    dimension = models.CharField(max_length=64)
    raw_value = models.FloatField()
    scale_min = models.FloatField()
    scale_max = models.FloatField()
    higher_is_better = models.BooleanField(default=True)
    value = models.FloatField(help_text="raw_value mapped linearly onto the rubric's scale, best end high")
    reason = models.TextField(blank=True, default="")
    raw_output = models.TextField(blank=True, default="")
    weighted_value = models.FloatField(
        null=True,
        blank=True,
        help_text="G-Eval's probability-weighted score on the rubric's scale, where the call returned logprobs",
    )
    confidence = models.FloatField(
        null=True,
        blank=True,
        help_text="the probability the judge gave the score it wrote, from its logprobs",
    )
    imported_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["judge", "item", "dimension"]
        constraints = [
            models.UniqueConstraint(
                fields=["judge", "item", "dimension"], name="judgescore_one_per_dimension"
            ),
            models.CheckConstraint(
                condition=Q(scale_min__lt=F("scale_max")), name="judgescore_scale_ordered"
            ),
            models.CheckConstraint(
                condition=Q(raw_value__gte=F("scale_min")) & Q(raw_value__lte=F("scale_max")),
                name="judgescore_raw_within_scale",
            ),
        ]
        indexes = [models.Index(fields=["item", "dimension"], name="judgescore_item_dim")]

    def __str__(self) -> str:
        return f"{self.judge} {self.item} {self.dimension}={self.value:g}"


class PairwiseVerdict(models.Model):
    """A judge's preference between two responses to the same prompt (the G-Eval pairwise format)."""

    class Winner(models.TextChoices):
        BASELINE = "baseline", "Baseline"
        ENHANCED = "enhanced", "Enhanced"
        TIE = "tie", "Tie"

    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="verdicts")
    baseline = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    enhanced = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    winner = models.CharField(max_length=10, choices=Winner.choices)
    confidence = models.FloatField(null=True, blank=True)
    baseline_score = models.FloatField(
        null=True, blank=True, help_text="the judge's overall score of the baseline"
    )
    enhanced_score = models.FloatField(
        null=True, blank=True, help_text="the judge's overall score of the enhanced"
    )
    reason = models.TextField(blank=True, default="")
    raw_output = models.TextField(blank=True, default="")
    imported_at = models.DateTimeField(default=timezone.now)
    swapped = models.BooleanField(
        default=False,
        help_text="sent with the enhanced system's response first (``baseline`` is then that item)",
    )

    class Meta:
        ordering = ["judge", "baseline", "enhanced"]
        constraints = [
            models.UniqueConstraint(fields=["judge", "baseline", "enhanced"], name="verdict_one_per_pair"),
            models.CheckConstraint(condition=~Q(baseline=F("enhanced")), name="verdict_two_items"),
            models.CheckConstraint(
                condition=Q(confidence__isnull=True) | (Q(confidence__gte=0) & Q(confidence__lte=1)),
                name="verdict_confidence_0_1",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.judge}: {self.baseline.item_id} vs {self.enhanced.item_id} → {self.winner}"


class JudgeFailure(models.Model):
    """An output of ``run_judge`` no score could be read from, kept with its error so none is dropped."""

    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="failures")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="judge_failures")
    dimension = models.CharField(max_length=64, blank=True, default="")
    error = models.TextField()
    raw_output = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["judge", "item", "id"]

    def __str__(self) -> str:
        return f"{self.judge} {self.item}: {self.error}"


class JudgeCriterionScore(models.Model):
    """A score on one of the judge's own criteria (G-Eval's accuracy, completeness, ...), kept under the
    judge's name for it; ``rubric_dimension`` says which rubric dimension it stands for in calibration,
    when the template maps it onto one."""

    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="criterion_scores")
    item = models.ForeignKey(
        Item, on_delete=models.CASCADE, related_name="+", help_text="the item, or a pair's baseline"
    )
    enhanced = models.ForeignKey(Item, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    criterion = models.CharField(max_length=100)
    rubric_dimension = models.CharField(max_length=64, blank=True, default="")
    raw_value = models.FloatField()
    scale_min = models.FloatField()
    scale_max = models.FloatField()
    higher_is_better = models.BooleanField(default=True)
    reason = models.TextField(blank=True, default="")
    evidence = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["judge", "item", "enhanced", "criterion"]
        constraints = [
            models.UniqueConstraint(
                fields=["judge", "item", "criterion"],
                condition=Q(enhanced__isnull=True),
                name="criterion_one_per_item",
            ),
            models.UniqueConstraint(
                fields=["judge", "item", "enhanced", "criterion"],
                condition=Q(enhanced__isnull=False),
                name="criterion_one_per_pair",
            ),
            models.CheckConstraint(
                condition=Q(raw_value__gte=F("scale_min")) & Q(raw_value__lte=F("scale_max")),
                name="criterion_raw_within_scale",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.judge} {self.item} {self.criterion}={self.raw_value:g}"
