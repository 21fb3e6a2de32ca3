"""Batches of items to evaluate."""

from __future__ import annotations

import json
from functools import lru_cache

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models

from hcs.rubric import Rubric

MIN_K = 3  # the guideline: each item receives k >= 3 independent annotations (the one definition)


@lru_cache(maxsize=64)
def _parsed_rubric(text: str) -> Rubric:
    """Rubrics parsed once per process (a Rubric is immutable): every rating request reads one."""
    return Rubric.from_dict(json.loads(text))


class Batch(models.Model):
    name = models.CharField(max_length=200, unique=True)
    # The rubric is stored whole with the batch so a batch keeps its rubric even if the file changes.
    rubric = models.JSONField()
    k = models.PositiveSmallIntegerField(
        default=MIN_K,
        validators=[MinValueValidator(MIN_K)],
        help_text=f"Independent annotations each item receives (at least {MIN_K}).",
    )
    is_open = models.BooleanField(default=True)
    one_system_per_prompt = models.BooleanField(
        default=False,
        help_text="Give each annotator at most one system's output per prompt.",
    )
    annotators = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        blank=True,
        related_name="restricted_batches",
        help_text="Leave empty to open the batch to every annotator.",
    )
    # What an annotator reads before the first item (README "Running a study on Prolific").
    consent_text = models.TextField(
        blank=True, default="", help_text="Markdown. When set, annotators must accept it before rating."
    )
    instructions = models.TextField(
        blank=True, default="", help_text="Markdown. Empty: the rubric's guidance and examples."
    )
    max_items_per_annotator = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1)]
    )
    max_session_minutes = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1)]
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # The queue's order (annotator.rating.services.queue_order): None is file order (batches made before the
    # random order, and ones made without the batch service); a seed is a random order anyone can redraw.
    order_seed = models.BigIntegerField(
        null=True,
        blank=True,
        help_text="Seed of the random order the queue hands items out in; empty: file order.",
    )
    # Offline labels (annotations imported from a file) were declared a random sample of the batch
    # (import_annotations --labelled-at-random); an import without the flag sets it back.
    labels_declared_random = models.BooleanField(default=False)
    # When a ranked list (items the judges disagree on most) was last put first in the queue: labels given
    # through the queue after it were chosen by the judges, not by the random order (ppi.sample).
    ranked_first_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "batches"
        ordering = ["-created_at", "name"]
        constraints = [
            models.CheckConstraint(condition=models.Q(k__gte=MIN_K), name="batch_k_at_least_3"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def rubric_text(self) -> str:
        """The rubric as canonical JSON (sorted keys), written once per instance: the key of the
        parsed rubric and of what the rating page renders from it."""
        cached = getattr(self, "_rubric_text", None)
        if cached is None:
            cached = self._rubric_text = json.dumps(self.rubric, sort_keys=True)
        return cached

    @property
    def rubric_obj(self) -> Rubric:
        cached = getattr(self, "_rubric_obj", None)
        if cached is None:
            cached = self._rubric_obj = _parsed_rubric(self.rubric_text)
        return cached


class Item(models.Model):
    # No index of its own: every index of the item table leads with the batch.
    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="items", db_index=False)
    item_id = models.CharField(max_length=200)
    prompt_id = models.CharField(max_length=200, blank=True, default="")
    position = models.PositiveIntegerField(default=0, help_text="Order in the uploaded file.")
    # Where the queue hands the item out (its key in the batch's order): the position in a file-order
    # batch, a seeded random key otherwise (annotator.rating.services.queue_order). Never rewritten.
    queue_rank = models.PositiveIntegerField(default=0)
    # Handed out before every other item, highest first (a review draw's or a ranked list's items);
    # 0 for the rest, which go closest to completion first.
    queue_first = models.PositiveIntegerField(default=0)
    prompt = models.TextField()
    response = models.TextField()
    context = models.TextField(blank=True, default="")
    expected_output = models.TextField(blank=True, default="")
    constraints = models.JSONField(default=list, blank=True)
    system_id = models.CharField(max_length=200, blank=True, default="")
    conversation = models.JSONField(default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    # Valid submitted annotations (an excluded annotator's stop counting, see
    # annotator.quality.services.exclusion), kept in step by the services that write annotations; the
    # assignment query orders and filters on it without counting rows.
    n_annotations = models.PositiveIntegerField(default=0)
    # Live leases (Assignment.state == leased), kept in step by the assignment services. The
    # lease query filters on n_annotations + n_leased < k on the item row it locks, so on
    # PostgreSQL a concurrent lease is re-checked against the committed row, not a stale count.
    n_leased = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["batch", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["batch", "item_id"], name="item_unique_in_batch"),
        ]
        indexes = [
            models.Index(fields=["batch", "system_id"], name="item_batch_system"),
            models.Index(fields=["batch", "prompt_id"], name="item_batch_prompt"),
            # The order the assignment service reads items in: closest to completion first. It also
            # serves the per-batch progress counts (n_annotations >= k), so no second index on those.
            models.Index(
                fields=["batch", "-queue_first", "-n_annotations", "-n_leased", "queue_rank"],
                name="item_next_order",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.batch.name}/{self.item_id}"
