"""Personal API tokens: a user's key for the HTTP API, stored only as a hash.

The key itself is shown once, when it is made; the database keeps its SHA-256 (the key is 256
random bits, so a fast hash is enough: there is nothing to guess) and a short prefix to tell keys
apart on the tokens page. A token acts with exactly its user's role, ends on its expiry date and
can be revoked at any time.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class ApiToken(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(
        max_length=100, help_text="What the token is for, e.g. 'eval script on the cluster'."
    )
    prefix = models.CharField(max_length=16, help_text="The key's first characters, to tell keys apart.")
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "API token"
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["user", "-created_at"], name="apitoken_user_created")]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name}, {self.user})"

    @property
    def active(self) -> bool:
        return self.revoked_at is None and self.expires_at > timezone.now()

    @property
    def state(self) -> str:
        if self.revoked_at is not None:
            return "revoked"
        return "active" if self.expires_at > timezone.now() else "expired"
