"""Reading API tokens: the one a request presents, and a user's own list."""

from __future__ import annotations

import hashlib

from django.db.models import QuerySet
from django.utils import timezone

from annotator.models import AccountScope, ApiToken

KEY_PREFIX = "hcs_"  # marks the key as this app's, so secret scanners and people recognise it


def token_hash(key: str) -> str:
    """What a token's row keeps of its key (``annotator.services.api_tokens`` makes keys)."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def api_token_for_key(key: str) -> ApiToken | None:
    """The live (not revoked, not expired) token with this key, with its user; None otherwise."""
    if not key or not key.startswith(KEY_PREFIX) or len(key) > 200:
        return None
    return (
        ApiToken.objects.select_related("user")
        .filter(
            key_hash=token_hash(key),
            revoked_at__isnull=True,
            expires_at__gt=timezone.now(),
            user__is_active=True,
            user__scope__isnull=True,
        )
        .first()
    )


def may_hold_api_tokens(user) -> bool:
    """Accounts an admin made may; accounts made by a link (crowd, invite, bulk) reach only their batches'
    rating pages, so they hold no token and the API refuses theirs."""
    return not AccountScope.objects.filter(user_id=user.pk).exists()


def api_tokens_of(*, user) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(user=user).order_by("-created_at")
