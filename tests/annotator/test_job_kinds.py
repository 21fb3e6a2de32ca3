"""The job kinds table: every kind a job row can have is listed once, and the worker, retry, stop and
reclaim go through it (a kind added to the table is run, stopped and tried again as it says)."""

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from django.utils.module_loading import import_string

from annotator import job_kinds
from annotator.job_kinds import JOB_KINDS, JobKind
from annotator.models import Job
from annotator.selectors.jobs import this_worker
from annotator.services.job_runner import job_run
from annotator.services.jobs import job_cancel, job_reclaim, job_retry
from tests.factories import make_user
from tests.test_import_graph import _imports, _modules

RUNS = []


def record_run(job, update):
    RUNS.append(job.params)
    update(job, state=Job.DONE, finished_at=timezone.now(), step="", message="recorded")


def raise_run(job, update):
    raise RuntimeError("the runner broke")


def next_params(job):
    return {**job.params, "attempt": job.params.get("attempt", 0) + 1}


@pytest.fixture
def kinds():
    kept = dict(JOB_KINDS)
    RUNS.clear()
    yield JOB_KINDS
    JOB_KINDS.clear()
    JOB_KINDS.update(kept)


def _job(kind, **fields):
    owner = get_user_model().objects.filter(username="owner").first() or make_user("owner", role="researcher")
    return Job.objects.create(kind=kind, created_by=owner, label="a job", params={"n": 1}, **fields)


def test_every_kind_of_the_model_is_listed_with_importable_functions():
    assert set(JOB_KINDS) == {kind for kind, _label in Job.KINDS}
    for kind in JOB_KINDS.values():
        assert callable(import_string(kind.runner)) and kind.gone
        assert not kind.retry or callable(import_string(kind.retry))
        assert not kind.release or callable(import_string(kind.release))
    assert JOB_KINDS[Job.JUDGE_RUN].runner.startswith("annotator.judges.")
    assert [k for k, v in JOB_KINDS.items() if v.stopping] == [Job.JUDGE_RUN]
    assert [k for k, v in JOB_KINDS.items() if v.release] == [Job.JUDGE_RUN]  # only a judge run holds a claim


def test_the_core_job_modules_do_not_import_the_judges_package():
    modules = _modules()
    for name in (
        "annotator.job_kinds",
        "annotator.services.jobs",
        "annotator.services.job_runner",
        "annotator.views.jobs",
        "annotator.tasks",
    ):
        reached = _imports(name, modules[name], modules)
        assert not [m for m in reached if m.startswith("annotator.judges")], name


@pytest.mark.django_db
def test_the_worker_runs_the_listed_runner(kinds):
    kinds["probe"] = JobKind(runner="tests.annotator.test_job_kinds.record_run", gone="gone")
    job = _job("probe")
    assert job_run(job_id=str(job.pk)) == Job.DONE
    assert RUNS == [{"n": 1}] and Job.objects.get(pk=job.pk).message == "recorded"


@pytest.mark.django_db
def test_a_runner_that_raises_fails_the_job_with_the_kinds_advice(kinds):
    kinds["probe"] = JobKind(
        runner="tests.annotator.test_job_kinds.raise_run", gone="gone", failed="Ask the probe again."
    )
    job = _job("probe")
    with pytest.raises(RuntimeError):
        job_run(job_id=str(job.pk))
    job.refresh_from_db()
    assert job.state == Job.FAILED
    assert job.message == (
        "The job stopped with an error (RuntimeError: the runner broke). Ask the probe again."
    )


@pytest.mark.django_db
def test_a_kind_no_longer_listed_fails_with_a_message_and_runs_nothing(kinds):
    job = _job("retired")
    assert job_run(job_id=str(job.pk)) == Job.FAILED
    job.refresh_from_db()
    assert job.state == Job.FAILED and "does not run jobs of the kind \u201cretired\u201d" in job.message
    assert job_kinds.job_kind(job) is job_kinds.UNLISTED


@pytest.mark.django_db
def test_retry_takes_the_kinds_params(kinds):
    kinds["probe"] = JobKind(
        runner="tests.annotator.test_job_kinds.record_run",
        gone="gone",
        retry="tests.annotator.test_job_kinds.next_params",
    )
    job = job_retry(job=_job("probe", state=Job.FAILED))
    assert job.state == Job.QUEUED and Job.objects.get(pk=job.pk).params == {"n": 1, "attempt": 1}
    plain = job_retry(job=_job(Job.EXPORT, state=Job.CANCELLED))
    assert Job.objects.get(pk=plain.pk).params == {"n": 1}


@pytest.mark.django_db
def test_a_judge_run_whose_calls_failed_calls_them_again():
    failed = job_retry(job=_job(Job.JUDGE_RUN, state=Job.FAILED, errors=[{"message": "item 1: boom"}]))
    assert Job.objects.get(pk=failed.pk).params == {"n": 1, "retry_failed": True}
    cancelled = job_retry(job=_job(Job.JUDGE_RUN, state=Job.CANCELLED, errors=[{"message": "x"}]))
    assert Job.objects.get(pk=cancelled.pk).params == {"n": 1}


@pytest.mark.django_db
def test_only_a_kind_that_can_stop_is_asked_to_stop_while_running(kinds, client):
    kinds["probe"] = JobKind(
        runner="tests.annotator.test_job_kinds.record_run",
        gone="gone",
        stopping="The probe stops after this step.",
    )
    alive = {"state": Job.RUNNING, "worker": this_worker(), "heartbeat_at": timezone.now()}
    probe = job_cancel(job=_job("probe", **alive))
    assert probe.state == Job.RUNNING and probe.cancel_requested
    export = job_cancel(job=_job(Job.EXPORT, **alive))
    assert export.state == Job.RUNNING and not export.cancel_requested
    again = _job("probe", **alive)
    client.force_login(again.created_by)
    page = client.post(f"/jobs/{again.pk}/stop/", follow=True).content.decode()
    assert "The probe stops after this step." in page


@pytest.mark.django_db
def test_a_job_whose_worker_is_gone_ends_with_its_kinds_message(kinds):
    kinds["probe"] = JobKind(
        runner="tests.annotator.test_job_kinds.record_run", gone="The probe's worker left."
    )
    job = job_reclaim(
        job=_job(
            "probe",
            state=Job.RUNNING,
            worker="elsewhere.example:1",
            heartbeat_at=timezone.now() - timezone.timedelta(hours=1),
        )
    )
    assert job.state == Job.FAILED and job.message == "The probe's worker left."
