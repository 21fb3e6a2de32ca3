"""A per-address limit on opening the public link pages (study, invite and sign-in links).

Counts live in the database (one row per address and minute), so every app server shares them,
like the sessions and the login lock-outs. The address is read by the rule the lock-outs use
(``annotator.client_address``: ``PROXY_COUNT``) and stored only as a hash.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from annotator.client_address import client_address
from annotator.models import RateBucket
from annotator.services.tokens import token_hash

KEEP = timedelta(hours=1)


def client_key(request) -> str:
    return token_hash("link-open:" + (client_address(request) or "unknown"))


def rate_limit_hit(*, key: str, limit: int | None = None, now: datetime | None = None) -> bool:
    """Count one request for ``key``; True when it is over the limit for this minute."""
    limit = settings.ANNOTATOR_LINK_OPENS_PER_MINUTE if limit is None else limit
    now = now or timezone.now()
    window = now.replace(second=0, microsecond=0)
    with transaction.atomic():
        if not RateBucket.objects.filter(key=key, window_start=window).update(count=F("count") + 1):
            try:
                with transaction.atomic():
                    RateBucket.objects.create(key=key, window_start=window, count=1)
            except IntegrityError:  # a parallel request made the row first
                RateBucket.objects.filter(key=key, window_start=window).update(count=F("count") + 1)
            RateBucket.objects.filter(window_start__lt=now - KEEP).delete()
        count = RateBucket.objects.filter(key=key, window_start=window).values_list("count", flat=True).first()
    return (count or 0) > limit
