"""Adjudication: a researcher's (or a granted adjudicator's) label for an item the annotators
disagreed on. Stored beside the annotations, never replacing them."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotator.models.batch import Batch, Item


class Adjudication(models.Model):
    item = models.OneToOneField(Item, on_delete=models.CASCADE, related_name="adjudication")
    adjudicator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    scores = models.JSONField(help_text="The adjudicated score per dimension.")
    flags = models.JSONField(default=list, blank=True)
    note = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"adjudication of {self.item}"


class AdjudicatorGrant(models.Model):
    """A researcher lets this user adjudicate one batch (researchers may adjudicate any)."""

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="adjudicator_grants")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="adjudicator_grants"
    )
    granted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    granted_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["batch", "user"], name="adjudicator_grant_once")]

    def __str__(self) -> str:
        return f"{self.user} adjudicates {self.batch}"
