"""The frozen set of items a researcher marks to compare judge versions on the same ground."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from annotator.models.batch import Batch, Item


class CalibrationSet(models.Model):
    """One per batch, frozen when marked: its items never change. To compare on other items a researcher
    retires it and marks a new one, which gets a new fingerprint (a card names the set it was read on)."""

    batch = models.OneToOneField(Batch, on_delete=models.CASCADE, related_name="calibration_set")
    items = models.ManyToManyField(Item, related_name="+")
    fingerprint = models.CharField(max_length=64, help_text="sha256 of the sorted item ids")
    how = models.CharField(
        max_length=200, help_text="how the items were chosen, e.g. 'random sample of 50, seed 7'"
    )
    note = models.TextField(blank=True, default="")
    marked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    frozen_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"calibration set of {self.batch} #{self.fingerprint[:12]}"
