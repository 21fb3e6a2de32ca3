"""Tasks for the background worker (django-tasks; ``manage.py db_worker`` runs them)."""

from django_tasks import task


@task()
def run_job(job_id: str) -> str:
    # Imported here: the web process only queues jobs, and the runner pulls in the report, export
    # and judge-client stacks (numpy, pandas, httpx) that only the worker needs.
    from annotator.services.job_runner import job_run

    return job_run(job_id=job_id)


# Ahead of queued jobs: the rating page plans its next-item query with these statistics.
ANALYZE_PRIORITY = 50


@task(priority=ANALYZE_PRIORITY)
def analyze_tables(labels: list[str]) -> None:
    from annotator.services.bulk import tables_analyze

    tables_analyze(labels=labels)
