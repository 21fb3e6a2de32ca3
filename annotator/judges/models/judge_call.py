"""Every call ``run_judge`` paid for, saved the moment it completes: what was sent, what came back, what it cost.

One row per judge × item (× enhanced item for a pairwise judge), written as ``sent`` before the request
leaves and completed when the answer arrives: a rerun skips items that have a row, ``--retry-failed``
redoes the failed, unreadable and ambiguous rows, ``--retry-unknown`` the rows still ``sent`` (a run killed
while the call was in flight, which may have been paid) and ``--force`` redoes them all. A paid call that a
later call replaces is kept, marked ``superseded``, so the ledger holds every call paid for:
``JudgeCall.objects`` reads the current calls, ``JudgeCall.ledger`` every row. The API key is never stored;
error bodies are masked before they get here.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone

from annotator.judges.models.judge import Judge
from annotator.models.batch import Item
from hcs.judge_output import is_ambiguous


class CurrentCalls(models.Manager):
    """The calls a judge's scores come from: not the paid calls a rerun replaced."""

    def get_queryset(self):
        return super().get_queryset().filter(superseded=False)


class JudgeCall(models.Model):
    OK = "ok"
    UNREADABLE = "unreadable"  # the endpoint answered; no score could be read (raw output kept)
    AMBIGUOUS = "ambiguous"  # the answer gives two different verdicts; neither was stored (raw output kept)
    FAILED = "failed"  # no usable answer after the retries (error body kept, masked)
    SENT = "sent"  # the request left and no outcome was saved: the run was killed while it was in flight
    STATUSES = [
        (OK, "Scored"),
        (UNREADABLE, "Unreadable output"),
        (AMBIGUOUS, "Ambiguous output"),
        (FAILED, "Call failed"),
        (SENT, "Sent, outcome unknown"),
    ]
    NOT_READ = (UNREADABLE, AMBIGUOUS)  # answered (and paid), but what it says was not stored whole
    JSON_SCHEMA, TEXT = "json_schema", "text"
    OUTPUT_MODES = [(JSON_SCHEMA, "Structured output (JSON schema)"), (TEXT, "Free text")]

    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="calls")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="judge_calls")
    enhanced = models.ForeignKey(
        Item,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        help_text="the second response of a pairwise call (``item`` is the baseline)",
    )
    sample = models.PositiveSmallIntegerField(
        default=0,
        help_text="0 for the call whose scores the judge keeps; 1, 2, ... for the repeats of --samples",
    )
    status = models.CharField(max_length=12, choices=STATUSES)
    template_name = models.CharField(max_length=200)
    template_version = models.CharField(max_length=100, blank=True, default="")
    template_hash = models.CharField(
        max_length=64, help_text="sha256 of the template's prompt text and settings"
    )
    model = models.CharField(max_length=200)
    params = models.JSONField(default=dict, blank=True, help_text="temperature, max_tokens, ...")
    prompt = models.JSONField(default=list, help_text="the rendered chat messages sent")
    raw_output = models.TextField(blank=True, default="")
    parsed = models.JSONField(
        default=dict, blank=True, help_text="per dimension: raw, value, reason; or the verdict"
    )
    error = models.TextField(blank=True, default="")
    http_status = models.PositiveSmallIntegerField(null=True, blank=True)
    tokens_in = models.PositiveIntegerField(null=True, blank=True)
    tokens_out = models.PositiveIntegerField(null=True, blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    attempts = models.PositiveSmallIntegerField(default=1)
    output_mode = models.CharField(
        max_length=12,
        choices=OUTPUT_MODES,
        blank=True,
        default="",
        help_text="what the answered request asked for; empty on calls saved before it was recorded",
    )
    request_key = models.CharField(
        max_length=64,
        blank=True,
        default="",
        help_text="sha256 of provider, base URL, request body and sample: the response cache's key",
    )
    cached = models.BooleanField(
        default=False, help_text="served from an identical earlier call: not paid for"
    )
    provider_batch = models.CharField(
        max_length=200,
        blank=True,
        default="",
        help_text="the provider's batch id while a --batch call waits in it: where a rerun fetches it from",
    )
    request = models.JSONField(
        default=dict,
        blank=True,
        help_text="the request's parameters as sent (max_tokens, response_format, logprobs, ...): all but "
        "the model and the messages; empty on calls saved before it was recorded",
    )
    cost = models.FloatField(
        null=True,
        blank=True,
        help_text="what the call was charged, at the run's prices and the tokens the provider reported; "
        "0 when served from the cache; null when the run had no prices",
    )
    currency = models.CharField(max_length=8, blank=True, default="", help_text="the currency of ``cost``")
    superseded = models.BooleanField(
        default=False, help_text="a paid call a later call of the same judge and item replaced (--force)"
    )
    created_at = models.DateTimeField(default=timezone.now)

    objects = CurrentCalls()
    ledger = models.Manager()  # every row, superseded paid calls included: what was spent

    class Meta:
        ordering = ["judge", "item", "enhanced", "sample"]
        base_manager_name = "ledger"
        constraints = [
            models.UniqueConstraint(
                fields=["judge", "item", "sample"],
                condition=Q(enhanced__isnull=True, superseded=False),
                name="judgecall_one_per_item",
            ),
            models.UniqueConstraint(
                fields=["judge", "item", "enhanced", "sample"],
                condition=Q(enhanced__isnull=False, superseded=False),
                name="judgecall_one_per_pair",
            ),
        ]
        indexes = [
            models.Index(fields=["judge", "status"], name="judgecall_judge_status"),
            models.Index(fields=["request_key", "status"], name="judgecall_request_key"),
        ]

    @classmethod
    def answered_status(cls, problems: list[tuple[str, str]]) -> str:
        """The status of an answered call from what reading it found: ``ok`` without a problem, ``ambiguous``
        when a verdict was ambiguous (``hcs.judge_output.AmbiguousOutput``), else ``unreadable``."""
        if not problems:
            return cls.OK
        return cls.AMBIGUOUS if any(is_ambiguous(error) for _, error in problems) else cls.UNREADABLE

    def __str__(self) -> str:
        return f"{self.judge} {self.item}: {self.status}"
