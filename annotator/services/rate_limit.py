"""Request limits counted in the database: opening the public link pages (per address), the API
(per token or signed-in user) and failed API token attempts (per address).

Counts live in the database (one row per key and window), so every app server and every worker
process shares them, like the sessions and the login lock-outs. The address is read by the rule the
lock-outs use (``annotator.client_address.client_network``: ``PROXY_COUNT``, IPv6 by /64) and stored
only as a hash.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import F
from django.utils import timezone

from annotator.client_address import client_network
from annotator.models import RateBucket
from annotator.services.tokens import token_hash

# Windows are at most a day long (annotator.env.RATE_UNITS); older rows count for nothing.
KEEP = timedelta(days=1, minutes=1)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class RateCount:
    count: int
    limit: int
    retry_after_s: int  # whole seconds until the window ends

    @property
    def over(self) -> bool:
        return self.count > self.limit


def client_key(request, scope: str = "link-open") -> str:
    return token_hash(f"{scope}:" + (client_network(request) or "unknown"))


def _window(now: datetime, period_s: int) -> tuple[datetime, int]:
    """The fixed window ``now`` falls in (aligned to the epoch, so every server agrees) and the
    whole seconds left in it."""
    elapsed = (now - _EPOCH).total_seconds()
    start = _EPOCH + timedelta(seconds=elapsed - elapsed % period_s)
    left = (start + timedelta(seconds=period_s) - now).total_seconds()
    return start, max(1, int(-(-left // 1)))


@transaction.atomic
def rate_count_add(*, key: str, limit: int, period_s: int = 60, now: datetime | None = None) -> RateCount:
    """Count one request for ``key`` in its ``period_s`` window; the count includes this one."""
    now = now or timezone.now()
    window, left = _window(now, period_s)
    if connection.vendor == "postgresql":
        # A count lost in a crash costs nothing; waiting for the WAL flush would cost every counted request.
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit TO OFF")
    if not RateBucket.objects.filter(key=key, window_start=window).update(count=F("count") + 1):
        try:
            with transaction.atomic():
                RateBucket.objects.create(key=key, window_start=window, count=1)
        except IntegrityError:  # a parallel request made the row first
            RateBucket.objects.filter(key=key, window_start=window).update(count=F("count") + 1)
        RateBucket.objects.filter(window_start__lt=now - KEEP).delete()
    count = RateBucket.objects.filter(key=key, window_start=window).values_list("count", flat=True).first()
    return RateCount(count or 0, limit, left)


def rate_count_read(*, key: str, limit: int, period_s: int = 60, now: datetime | None = None) -> RateCount:
    """The count so far in ``key``'s current window, counting nothing."""
    window, left = _window(now or timezone.now(), period_s)
    count = RateBucket.objects.filter(key=key, window_start=window).values_list("count", flat=True).first()
    return RateCount(count or 0, limit, left)


def rate_limit_hit(*, key: str, limit: int | None = None, now: datetime | None = None) -> bool:
    """Count one link open for ``key``; True when it is over the limit for this minute."""
    limit = settings.ANNOTATOR_LINK_OPENS_PER_MINUTE if limit is None else limit
    return rate_count_add(key=key, limit=limit, period_s=60, now=now).over
