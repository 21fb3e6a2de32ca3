"""A recorded draw of items for review: each candidate's probability π and whether it was drawn, so the
report can weight the labels by 1/π and keep its PPI estimate unbiased (active inference)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from annotator.models.batch import Batch, Item


class ReviewDraw(models.Model):
    """Immutable once made. A batch has at most one draw in force; retiring it (``retired_at``) keeps the
    record and lets a new draw be made, and the report reads the draw in force."""

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="review_draws")
    budget = models.PositiveIntegerField(help_text="expected number of items drawn: the sum of π")
    seed = models.BigIntegerField()
    mix = models.FloatField(help_text="share of the budget spread uniformly over the candidates")
    judges = models.JSONField(default=list, help_text="names of the judges whose uncertainty set π")
    made_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    made_at = models.DateTimeField(default=timezone.now)
    retired_at = models.DateTimeField(null=True, blank=True)

    IN_FORCE = Q(retired_at__isnull=True)  # not retired: what the report weights by; one per batch

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["batch"], condition=Q(retired_at__isnull=True), name="one_review_draw_in_force"
            )
        ]

    def save(self, *args, **kwargs):
        if not self._state.adding:  # retiring is a queryset update in the service
            raise ValueError("a review draw is immutable once made; retire it and draw again")
        super().save(*args, **kwargs)

    def __str__(self) -> str:
        return f"review draw #{self.pk} of {self.batch} (budget {self.budget}, seed {self.seed})"


class ReviewDrawItem(models.Model):
    """One item of the draw's population: a candidate (unlabelled, judged) with its π and whether it was
    drawn, or an item already labelled when the draw was made (π = 1, drawn for certain)."""

    draw = models.ForeignKey(ReviewDraw, on_delete=models.CASCADE, related_name="rows")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    pi = models.FloatField()
    drawn = models.BooleanField()
    labelled_before = models.BooleanField(default=False)
    uncertainty = models.FloatField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["draw", "item"], name="review_draw_item_once"),
            models.CheckConstraint(condition=Q(pi__gt=0) & Q(pi__lte=1), name="review_draw_pi_in_0_1"),
        ]

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise ValueError("a review draw is immutable once made; retire it and draw again")
        super().save(*args, **kwargs)
