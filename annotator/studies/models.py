"""Studies: who came in by which link, their consent, time and end; the links themselves.

Every link token is a random secret (``annotator.services.tokens``) stored only as its SHA-256
hash, so a copy of the database cannot be turned into working links. A link expires, and an
admin can revoke it.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from annotator.models.batch import Batch

TOKEN_HASH_LENGTH = 64  # hex SHA-256


class LinkBase(models.Model):
    token_hash = models.CharField(max_length=TOKEN_HASH_LENGTH, unique=True)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        abstract = True

    def status(self, now=None) -> str:
        """live, revoked or expired (and, for links that run out, used up)."""
        if self.revoked_at is not None:
            return "revoked"
        return "expired" if (now or timezone.now()) >= self.expires_at else "live"

    @property
    def status_now(self) -> str:
        return self.status()


class AccountScope(models.Model):
    """An account that may rate only the batches listed here (made by a link or a bulk list).

    An account without a scope sees every batch open to annotators, as before. A scoped
    account whose batches were all deleted sees none: the scope row itself is the limit.
    """

    class Origin(models.TextChoices):
        INVITE = "invite", "Invite link"
        BULK = "bulk", "Bulk list"
        CROWD = "crowd", "Crowd platform"

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="scope")
    origin = models.CharField(max_length=10, choices=Origin.choices)
    batches = models.ManyToManyField(Batch, blank=True, related_name="+")

    def __str__(self) -> str:
        return f"{self.user} ({self.origin})"


class InviteLink(LinkBase):
    """Whoever opens it picks a username and password and becomes an annotator of these batches."""

    batches = models.ManyToManyField(Batch, related_name="invite_links")
    max_uses = models.PositiveIntegerField(default=1)
    uses = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ("-created_at",)

    def __str__(self) -> str:
        return f"invite {self.pk} ({self.uses}/{self.max_uses})"

    def status(self, now=None) -> str:
        status = super().status(now)
        return "used up" if status == "live" and self.uses >= self.max_uses else status


class SignInLink(LinkBase):
    """A one-time link that signs one bulk-created account in and lets them set a password."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="signin_links")
    used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "sign-in link"
        ordering = ("-created_at",)

    def status(self, now=None) -> str:
        status = super().status(now)
        return "used" if status == "live" and self.used_at is not None else status


class StudyLink(LinkBase):
    """The URL pasted into a crowd platform: workers arrive with their platform ids in the query."""

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="study_links")
    platform = models.CharField(max_length=20)  # a key of annotator.studies.crowd.PLATFORMS
    quota = models.PositiveIntegerField(help_text="Most items one worker rates.")
    max_minutes = models.PositiveIntegerField(null=True, blank=True, help_text="Longest session, in minutes.")
    completion_code = models.CharField(max_length=100)
    completion_url = models.CharField(
        max_length=500, blank=True, default=""
    )  # http(s), checked by study_link_create
    screen_out_code = models.CharField(max_length=100, blank=True, default="")
    no_consent_code = models.CharField(max_length=100, blank=True, default="")

    class Meta:
        ordering = ("-created_at",)

    def __str__(self) -> str:
        return f"{self.platform} link {self.pk} for {self.batch}"


class Enrolment(models.Model):
    """One annotator's passage through one batch: consent, instructions, time, and how it ended.

    Crowd workers carry their platform ids here (kept for payment, shown only to admins); their
    account's username is a pseudonym, which is all reports and exports show.
    """

    class End(models.TextChoices):
        NONE = "", "Working"
        DONE = "done", "Done"
        TIMED_OUT = "timed_out", "Timed out"
        SCREENED_OUT = "screened_out", "Screened out"
        DECLINED = "declined", "Declined consent"
        FULL = "full", "Study full"  # nothing was left to rate when the worker could start: no code
        RETURNED = (
            "returned",
            "Returned",
        )  # the worker returned the study on Prolific (a webhook said so): no code

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="enrolments")
    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="enrolments")
    study_link = models.ForeignKey(
        StudyLink, null=True, blank=True, on_delete=models.SET_NULL, related_name="enrolments"
    )
    platform = models.CharField(max_length=20, blank=True, default="")
    worker_id = models.CharField(max_length=100, blank=True, default="")
    platform_study_id = models.CharField(max_length=100, blank=True, default="")
    platform_session_id = models.CharField(
        max_length=100, blank=True, default=""
    )  # the latest, kept once ended
    # The platform session the worker first arrived with: that session id belongs to this worker id only.
    entry_session_id = models.CharField(max_length=100, blank=True, default="")
    started_at = models.DateTimeField(default=timezone.now)
    consented_at = models.DateTimeField(null=True, blank=True)
    instructions_seen_at = models.DateTimeField(null=True, blank=True)
    end = models.CharField(max_length=20, choices=End.choices, blank=True, default="")
    VISIT_OVER = ~Q(end="")  # done, timed out, screened out or declined: the ratings are final
    ended_at = models.DateTimeField(null=True, blank=True)
    end_reason = models.TextField(blank=True, default="")

    class Meta:
        ordering = ("batch", "started_at", "pk")
        constraints = (
            models.UniqueConstraint(fields=["user", "batch"], name="enrolment_one_per_user_batch"),
            # The same platform worker is one account per batch, whichever link they came by.
            models.UniqueConstraint(
                fields=["batch", "platform", "worker_id"],
                condition=~Q(worker_id=""),
                name="enrolment_one_per_worker_batch",
            ),
            # One platform session is one worker: editing the worker id in the URL makes no second account.
            models.UniqueConstraint(
                fields=["batch", "platform", "entry_session_id"],
                condition=~Q(entry_session_id=""),
                name="enrolment_one_worker_per_session",
            ),
        )

    def __str__(self) -> str:
        return f"{self.user} in {self.batch} ({self.end or 'working'})"

    @property
    def is_crowd(self) -> bool:
        return bool(self.worker_id)


class RateBucket(models.Model):
    """Requests from one client address within one minute, for the public link pages."""

    key = models.CharField(max_length=TOKEN_HASH_LENGTH)
    window_start = models.DateTimeField()
    count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = (
            models.UniqueConstraint(fields=["key", "window_start"], name="ratebucket_one_per_window"),
        )
        indexes = (models.Index(fields=["window_start"], name="ratebucket_window"),)
