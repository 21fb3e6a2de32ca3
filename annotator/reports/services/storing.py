"""Storing computed reports for a batch revision, and pruning those no longer served; serving a
report from its stored row, or computing and storing it (``report_through_cache``)."""

from __future__ import annotations

import logging
import pickle
import time
from typing import Any

from django.db import IntegrityError, transaction

from annotator.models import Batch, ReportCache
from annotator.reports.selectors.stored import report_revision, stored_payloads

log = logging.getLogger(__name__)

# Reports kept per batch at its current revision (the API lets a researcher ask for any seed or
# resample count, each a row of its own); older revisions are always pruned.
KEEP_PER_BATCH = 20


@transaction.atomic
def report_cache_store(
    *, batch: Batch, revision: str, current: str, options: str, report: Any, seconds: float
) -> None:
    """Store ``report`` computed at ``revision`` for (batch, options), and drop the batch's rows of
    revisions other than ``current`` (read after computing). A report whose batch changed while it
    was computed is not stored, and prunes nothing newer than itself."""
    if revision != current:
        return
    payload = pickle.dumps(report, protocol=pickle.HIGHEST_PROTOCOL)
    try:
        with transaction.atomic():
            ReportCache.objects.create(
                batch=batch, revision=revision, options=options, payload=payload, seconds=seconds
            )
    except IntegrityError:  # another server computed the same report meanwhile; theirs is as good
        return
    ReportCache.objects.filter(batch=batch).exclude(revision=current).delete()
    stale = list(
        ReportCache.objects.filter(batch=batch)
        .order_by("-computed_at", "-pk")
        .values_list("pk", flat=True)[KEEP_PER_BATCH:]
    )
    if stale:
        ReportCache.objects.filter(pk__in=stale).delete()


def report_cache_drop(*, batch: Batch, revision: str, options: str) -> None:
    """Delete a stored report that cannot be read (a class it holds gone or changed), so the report
    computed instead takes its place."""
    ReportCache.objects.filter(batch=batch, revision=revision, options=options).delete()


def report_through_cache(
    *, batch: Batch, key: str, compute, also: tuple[str, ...] = (), pick=lambda found: found
):
    """The stored result for ``key`` at the batch's revision, else ``compute()``, stored for the next
    request. ``also`` names stored results that contain this one (``pick`` takes it out of them)."""
    revision = report_revision(batch=batch)
    rows = stored_payloads(batch=batch, revision=revision, keys=[key, *also])
    for found, take in [(key, lambda result: result)] + [(other, pick) for other in also]:
        if found not in rows:
            continue
        try:  # only report_cache_store writes these rows; a release may not read them all the same
            return take(pickle.loads(rows[found]))
        except Exception:
            log.warning("stored report %s of batch %s unreadable; recomputed", found, batch.pk, exc_info=True)
            report_cache_drop(batch=batch, revision=revision, options=found)
    started = time.perf_counter()
    result = compute()
    seconds = time.perf_counter() - started
    report_cache_store(
        batch=batch,
        revision=revision,
        current=report_revision(batch=batch),
        options=key,
        report=result,
        seconds=seconds,
    )
    return result
