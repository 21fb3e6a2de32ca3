"""The streams' background task: computing the changed windows of a stream's series after traces arrive."""

from django_tasks import task


@task()
def stream_series_refresh(stream_id: int) -> int:
    # Imported here: the web process only queues the task; the statistics stack is the worker's.
    from annotator.streams.services.series import series_refresh_all

    return series_refresh_all(stream_id=stream_id)
