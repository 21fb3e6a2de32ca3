"""Computed reports, stored per batch revision and options so every server and worker serves the same one."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from annotator.models.batch import Batch


class ReportCache(models.Model):
    """A pickled report (or report section) of one batch, valid while the batch's revision is unchanged."""

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="+", db_index=False)
    # The help text keeps the function's first home (now annotator.reports.selectors.stored.report_revision;
    # annotator/moved.py maps the old path): a changed help text would be a migration of its own.
    revision = models.CharField(max_length=64, help_text="annotator.selectors.report_cache.report_revision")
    options = models.CharField(max_length=200, help_text="what was computed and with which options")
    payload = models.BinaryField()
    seconds = models.FloatField(help_text="how long computing it took")
    computed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["batch", "revision", "options"], name="report_cache_once"),
        ]

    def __str__(self) -> str:
        return f"report of batch {self.batch_id} at {self.revision[:12]} ({self.options})"
