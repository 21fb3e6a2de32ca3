"""Tasks for the background worker (django-tasks; ``manage.py db_worker`` runs them)."""

from django_tasks import task


@task()
def run_job(job_id: str) -> str:
    # Imported here: the web process only queues jobs, and the runner pulls in the report, export
    # and judge-client stacks (numpy, pandas, httpx) that only the worker needs.
    from annotator.services.job_runner import job_run

    return job_run(job_id=job_id)
