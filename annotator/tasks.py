"""Tasks for the background worker (django-tasks; ``manage.py db_worker`` runs them)."""

from django_tasks import task

from annotator.services.job_runner import job_run


@task()
def run_job(job_id: str) -> str:
    return job_run(job_id=job_id)
