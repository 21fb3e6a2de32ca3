"""Background jobs: long uploads and report builds that run in the worker, off the request path.

A job row is what the status page reads: it is written by the web request that queues the work
and by the worker that does it, so any app server can show it. The input (an uploaded file) and the
output (a built report) are kept in the row itself, not on one server's disk.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models


class Job(models.Model):
    UPLOAD = "upload"
    EXPORT = "export"
    JUDGE_RUN = "judge_run"
    STREAM_ALERT = "stream_alert"
    KINDS = [
        (UPLOAD, "Upload"),
        (EXPORT, "Report export"),
        (JUDGE_RUN, "Judge run"),
        (STREAM_ALERT, "Stream alert webhook"),
    ]

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"
    STATES = [
        (QUEUED, "Queued"),
        (RUNNING, "Running"),
        (DONE, "Done"),
        (FAILED, "Failed"),
        (CANCELLED, "Cancelled"),
    ]

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    kind = models.CharField(max_length=20, choices=KINDS)
    label = models.CharField(max_length=300)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    state = models.CharField(max_length=10, choices=STATES, default=QUEUED)
    step = models.CharField(max_length=200, blank=True, help_text="What the worker is doing now.")
    attempts = models.PositiveSmallIntegerField(default=0)
    # What to do: the pending upload's options, or the batch and format of an export.
    params = models.JSONField(default=dict)
    payload = models.BinaryField(
        null=True, blank=True, help_text="The uploaded file, kept until the job succeeds."
    )
    # The outcome: a message, the row errors of a refused upload, or the built file.
    message = models.TextField(blank=True)
    errors = models.JSONField(default=list, blank=True)
    output = models.BinaryField(null=True, blank=True)
    output_name = models.CharField(max_length=300, blank=True)
    output_type = models.CharField(max_length=100, blank=True)
    # A judge run: its counters as it goes (done, total, failed, retries, tokens, cost, ETA), and the
    # researcher's request to stop it, which the worker reads between calls.
    progress = models.JSONField(default=dict, blank=True)
    cancel_requested = models.BooleanField(default=False)
    # The worker process running the job ("host:pid") and when it last said it still is: a job whose
    # worker is gone (killed, restarted) is failed, so it can be tried again.
    worker = models.CharField(max_length=300, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["created_by", "-created_at"])]

    def __str__(self) -> str:
        return f"{self.get_kind_display()}: {self.label} ({self.state})"

    @property
    def finished(self) -> bool:
        return self.state in (self.DONE, self.FAILED, self.CANCELLED)
