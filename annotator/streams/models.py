"""A stream's tables: the stream, every trace it received, the judges' scores of every trace, the
series kept per window, the alerts and the webhook's delivery log."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from annotator.models.batch import MIN_K, Batch, Item

# The sampling rule, recorded with each stream so the sampled set is a known random sample.
SAMPLING_RULE = "sha256(salt + trace_id): first 8 bytes, big-endian, / 2**64 < human_rate"


class Stream(models.Model):
    DAY, WEEK = "day", "week"

    name = models.CharField(max_length=200, unique=True)
    rubric = models.JSONField()
    judges = models.JSONField(default=list, help_text="Names of the judges whose scores the stream keeps.")
    # The judges the worker runs on every trace (each also named in ``judges``): one object per judge, its
    # name, template, model and endpoint, and its cost cap per UTC day (docs/streams.md).
    judge_runs = models.JSONField(default=list, blank=True)
    # Every trace as an item of a closed batch that is never offered to people: the judges' run path
    # (ledger, cache, cost cap, retries) scores items. None until the stream has a judge to run.
    judge_batch = models.OneToOneField(
        Batch, null=True, blank=True, on_delete=models.PROTECT, related_name="stream_judging"
    )
    # A run of the stream's judges by the worker is queued and has not started.
    judges_run_queued = models.BooleanField(default=False)
    human_rate = models.FloatField(validators=[MinValueValidator(0.0), MaxValueValidator(1.0)])
    k = models.PositiveSmallIntegerField(default=MIN_K, validators=[MinValueValidator(MIN_K)])
    # "day", "week", or a whole number: windows of that many traces sampled for human labels.
    window = models.CharField(max_length=20)
    salt = models.CharField(max_length=64)
    sampling_rule = models.CharField(max_length=200, default=SAMPLING_RULE)
    # The sampled traces are this batch's items: the queue, leases, studies and quality control apply.
    batch = models.OneToOneField(Batch, on_delete=models.PROTECT, related_name="stream")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    # A refresh of the series by the worker is queued and has not started: later ingests queue no other.
    series_refresh_queued = models.BooleanField(default=False)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(human_rate__gte=0) & models.Q(human_rate__lte=1), name="stream_rate_0_to_1"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def window_count(self) -> int | None:
        """Human-labelled traces per window for a count window; None for a day or a week."""
        return int(self.window) if self.window.isdigit() else None


class Trace(models.Model):
    stream = models.ForeignKey(Stream, on_delete=models.CASCADE, related_name="traces", db_index=False)
    trace_id = models.CharField(max_length=200)
    timestamp = models.DateTimeField()
    prompt = models.TextField()
    response = models.TextField()
    context = models.TextField(blank=True, default="")
    system_id = models.CharField(max_length=200, blank=True, default="")
    metadata = models.JSONField(default=dict, blank=True)
    sampled = models.BooleanField(default=False)
    # The sampled trace's item in the stream's batch (null for the others).
    item = models.OneToOneField(
        Item, null=True, blank=True, on_delete=models.SET_NULL, related_name="stream_trace"
    )
    received_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["stream", "trace_id"], name="trace_once_per_stream"),
        ]
        indexes = [
            models.Index(fields=["stream", "timestamp"], name="trace_stream_time"),
            models.Index(
                fields=["stream", "timestamp"],
                condition=models.Q(sampled=True),
                name="trace_stream_sampled_time",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.stream_id}/{self.trace_id}"


class TraceScore(models.Model):
    """A judge's score of one trace on one dimension; the trace's timestamp is copied here so a window's
    scores are read from this table's index alone."""

    stream = models.ForeignKey(Stream, on_delete=models.CASCADE, related_name="+", db_index=False)
    trace = models.ForeignKey(Trace, on_delete=models.CASCADE, related_name="scores", db_index=False)
    timestamp = models.DateTimeField()
    judge = models.CharField(max_length=200)
    dimension = models.CharField(max_length=64)
    value = models.FloatField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["trace", "judge", "dimension"], name="trace_score_once"),
        ]
        indexes = [
            models.Index(fields=["stream", "judge", "dimension", "timestamp"], name="trace_score_window"),
        ]


class StreamChange(models.Model):
    """A span of trace time whose data changed (traces or judge scores arrived). The id orders changes:
    a stored window computed at change id n is stale when a later change overlaps it."""

    stream = models.ForeignKey(Stream, on_delete=models.CASCADE, related_name="changes")
    start = models.DateTimeField()
    end = models.DateTimeField()


class StreamWindowStat(models.Model):
    """One window of one judge × dimension series, as last computed."""

    stream = models.ForeignKey(Stream, on_delete=models.CASCADE, related_name="window_stats", db_index=False)
    judge = models.CharField(max_length=200)
    dimension = models.CharField(max_length=64)
    start = models.DateTimeField()
    end = models.DateTimeField()
    change_seen = models.BigIntegerField(help_text="the last StreamChange id when it was computed")
    human_key = models.CharField(max_length=200, help_text="fingerprint of the window's human labels")
    stats = models.JSONField()
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["stream", "judge", "dimension", "start", "end"], name="stream_window_once"
            ),
        ]


class StreamAlert(models.Model):
    """A drift alert on one window of a series. ``event_id`` is what the webhook's receiver dedupes on."""

    stream = models.ForeignKey(Stream, on_delete=models.CASCADE, related_name="alerts")
    judge = models.CharField(max_length=200)
    dimension = models.CharField(max_length=64)
    window_start = models.DateTimeField()
    window_end = models.DateTimeField()
    kind = models.CharField(max_length=64)
    detail = models.JSONField(default=dict, blank=True)
    event_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            # One alert per change, whichever worker's refresh saw it first.
            models.UniqueConstraint(
                fields=["stream", "judge", "dimension", "kind", "window_start"], name="stream_alert_once"
            ),
        ]


class StreamWebhookDelivery(models.Model):
    """One attempt to deliver an alert to ``STREAM_ALERT_WEBHOOK_URL``."""

    alert = models.ForeignKey(StreamAlert, on_delete=models.CASCADE, related_name="deliveries")
    attempt = models.PositiveSmallIntegerField()
    url = models.CharField(max_length=500)
    attempted_at = models.DateTimeField()
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    ok = models.BooleanField(default=False)
    error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["alert", "attempt"]
