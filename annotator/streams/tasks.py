"""The streams' background tasks: computing the changed windows of a stream's series after traces arrive, and
running its judges on the traces they have not scored (each queued at most once at a time, by a flag on
the stream)."""

from __future__ import annotations

import datetime as dt
import logging

from django_tasks import task

from annotator.models import Stream

log = logging.getLogger(__name__)


@task()
def stream_series_refresh(stream_id: int) -> int:
    # Imported here: the web process only queues the task; the statistics stack is the worker's.
    from annotator.streams.services.series import series_refresh_all

    return series_refresh_all(stream_id=stream_id)


@task()
def stream_judges_run(stream_id: int) -> int:
    """Run the stream's judges on the traces they have not scored (``annotator.streams.services.judging``),
    refresh the series their scores changed, and queue the next run when some wait (for the next UTC day
    when a cap stopped one). Returns how many traces got scores."""
    from django.utils import timezone

    from annotator.streams.services.judging import judges_run_all, next_run_at
    from annotator.streams.services.series import series_refresh_all

    now = timezone.now()
    days = judges_run_all(stream_id=stream_id, now=now)
    scored = sum(day.scored for day in days)
    if scored:
        # Here rather than queued: this is the worker, and the alerts should see the new scores now.
        series_refresh_all(stream_id=stream_id)
    again = next_run_at(days, now)
    if again is not None:
        judges_run_queue(stream_id=stream_id, run_after=again if again > now else None)
    return scored


def queue_once(task, *, stream_id: int, flag: str, what: str, run_after: dt.datetime | None = None) -> bool:
    """Enqueue ``task`` for the stream unless its ``flag`` (a boolean field of ``Stream``) says one is queued:
    the queued one will see what changed meanwhile. At ``run_after`` when the backend can defer (else not
    queued: the next ingest asks again). Returns whether it was queued."""
    if run_after is not None:
        if not task.get_backend().supports_defer:
            return False
        task = task.using(run_after=run_after)
    if not Stream.objects.filter(pk=stream_id, **{flag: False}).update(**{flag: True}):
        return False
    try:
        task.enqueue(stream_id=stream_id)
    except Exception:
        # Not queued: the next ingest tries again.
        Stream.objects.filter(pk=stream_id).update(**{flag: False})
        log.exception("stream %s: %s was not queued", stream_id, what)
        return False
    return True


def judges_run_queue(*, stream_id: int, run_after: dt.datetime | None = None) -> bool:
    """Ask the worker to run the stream's judges (at ``run_after`` when given) unless a run is queued. A
    later time needs a backend that can defer; without one the next ingest queues the run. Returns
    whether one was queued."""
    return queue_once(
        stream_judges_run,
        stream_id=stream_id,
        flag="judges_run_queued",
        what="the judges' run",
        run_after=run_after,
    )
