"""Making and revoking personal API tokens (the tokens page and ``manage.py api_token`` call these)."""

from __future__ import annotations

import secrets
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotator.models import ApiToken
from annotator.selectors.api_tokens import KEY_PREFIX, token_hash

PREFIX_LENGTH = len(KEY_PREFIX) + 8
NAME_MAX_LENGTH = ApiToken._meta.get_field("name").max_length


def token_days_error(days: int | None) -> str | None:
    """Why ``days`` is not an allowed lifetime (None when it is)."""
    longest = settings.ANNOTATOR_API_TOKEN_MAX_DAYS
    if days is None or isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= longest:
        return f"A token lasts from 1 to {longest} days."
    return None


@transaction.atomic
def api_token_create(*, user, name: str, days: int) -> tuple[ApiToken, str]:
    """A new token for ``user``, valid for ``days`` days. Returns the row and the key (shown once)."""
    error = token_days_error(days)
    clean = (name or "").strip()
    if error is None and not clean:
        error = "Give the token a name that says what it is for."
    if error is None and len(clean) > NAME_MAX_LENGTH:
        error = f"The name is longer than {NAME_MAX_LENGTH} characters."
    if error:
        raise ValueError(error)
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user,
        name=clean,
        prefix=key[:PREFIX_LENGTH],
        key_hash=token_hash(key),
        expires_at=timezone.now() + timedelta(days=days),
    )
    return token, key


@transaction.atomic
def api_token_revoke(*, token: ApiToken) -> ApiToken:
    """Revoke ``token`` at once (revoking twice keeps the first time)."""
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


def api_token_touch(*, token: ApiToken) -> None:
    """Record that the token was used, at most once a minute (no write on every request)."""
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > timedelta(minutes=1):
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
