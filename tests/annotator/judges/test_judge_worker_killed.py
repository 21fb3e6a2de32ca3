"""A judge run whose background worker is SIGKILLed: the job is failed with its claim on the judge released,
so Try again resumes at once and pays for no call twice; a claim still live is refused by name and time."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from annotator.counted import counted
from annotator.judges.engine.options import RunOptions
from annotator.judges.engine.progress import Prices
from annotator.judges.services import jobs as judge_jobs
from annotator.judges.services.jobs import judge_job_create
from annotator.judges.services.runs import CLAIM_STALE_AFTER, JudgeBusy, judge_run_claim
from annotator.models import Job, Judge, JudgeCall
from annotator.services.jobs import job_reclaim
from tests.factories import make_batch, make_user
from tests.fake_judge import FakeJudge

ROOT = Path(__file__).resolve().parents[3]
N_ITEMS, CONCURRENCY = 30, 4
ANSWER = re.compile(r"\(answer (\d+)\)")

# The worker: the real job runner in a process of its own, which the test kills mid-run.
WORKER = """
import os, sys
os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
from django.conf import settings
settings.DATABASES["default"]["NAME"] = sys.argv[1]
settings.ANNOTATOR_JOB_HEARTBEAT_SECONDS = 1
import django
django.setup()
from annotator.services import job_runner
print("running", flush=True)
job_runner.job_run(job_id=sys.argv[2])
"""


def called(fake) -> list[str]:
    """The items the endpoint was asked about, in arrival order (one entry per request, so per payment)."""
    return [
        f"killed-{ANSWER.search(r['body']['messages'][-1]['content']).group(1)}" for r in list(fake.requests)
    ]


def _judge_job(monkeypatch, user, url: str) -> Job:
    """A judge run queued as the Judges page queues it, but left for the test's own worker process."""
    with monkeypatch.context() as m:
        m.setattr(judge_jobs, "job_enqueue", lambda job: None)
        options = RunOptions(
            base_url=url,
            model="fake-1",
            key_env="OPENAI_API_KEY",
            concurrency=CONCURRENCY,
            judge="killed-judge",
            prices=Prices(2.5, 10.0),
        )
        return judge_job_create(
            batch=make_batch("killed", n_items=N_ITEMS),
            template="hub_answer_correctness",
            user=user,
            options=options,
        )


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_killed_worker_releases_its_claim_and_try_again_resumes_at_once(client, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-killed-123456789")
    user = make_user("res", role="researcher")
    client.force_login(user)
    with FakeJudge(latency=0.4) as fake:
        job = _judge_job(monkeypatch, user, fake.url)
        worker = subprocess.Popen(
            [sys.executable, "-c", WORKER, connection.settings_dict["NAME"], str(job.pk)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert worker.stdout.readline().strip() == "running", worker.stderr.read()
            deadline = time.monotonic() + 60
            while fake.calls < 2 * CONCURRENCY and time.monotonic() < deadline:
                time.sleep(0.01)
            assert fake.calls >= 2 * CONCURRENCY, "the run never got going"
            judge = Judge.objects.get(name="killed-judge")
            assert judge.run_claim and judge.run_claim_job == job.pk
            assert judge.run_claim_worker.endswith(f":{worker.pid}")  # the claim names its process
        finally:
            os.kill(worker.pid, signal.SIGKILL)
            worker.wait(10)
        assert worker.returncode == -signal.SIGKILL
        time.sleep(0.6)  # the fake finishes answering the dead client
        before = called(fake)
        unknown = sorted(
            JudgeCall.objects.filter(status=JudgeCall.SENT).values_list("item__item_id", flat=True)
        )
        assert unknown, "the kill came while calls were in flight"
        assert Judge.objects.get(pk=judge.pk).run_claim  # the dead process could not release it

        page = client.get(
            reverse("job_status", args=[job.pk]), headers={"HX-Request": "true"}
        ).content.decode()
        job.refresh_from_db()
        assert job.state == Job.FAILED and "claim on the judge was released" in job.message
        assert "two minutes" not in job.message and "Try again" in page
        judge.refresh_from_db()
        assert (judge.run_claim, judge.run_claimed_at, judge.run_claim_worker, judge.run_claim_job) == (
            "",
            None,
            "",
            None,
        )

        # At once, well within CLAIM_STALE_AFTER: the test settings run the queued job inside the request.
        response = client.post(reverse("job_try_again", args=[job.pk]))
        assert response.status_code == 302
        job.refresh_from_db()
        assert job.state == Job.DONE and job.attempts == 2, job.message
        assert "another process" not in job.message
        assert (
            f"{counted(len(unknown), 'call was', 'calls were')} sent by a run that was killed" in job.message
        )
        again = called(fake)[len(before) :]
    paid = Counter(before + again)
    assert again and not set(again) & set(before)  # the rerun sent nothing the killed run had sent
    assert max(paid.values()) == 1 and len(paid) == N_ITEMS  # every item paid for exactly once
    rows = dict(JudgeCall.objects.values_list("item__item_id", "status"))
    assert sorted(k for k, v in rows.items() if v == JudgeCall.SENT) == unknown  # left alone, not re-sent
    assert len(rows) == N_ITEMS and Judge.objects.get(pk=judge.pk).run_claim == ""


def _claimed(name: str, **holder) -> Judge:
    judge = Judge.objects.create(name=name)
    Judge.objects.filter(pk=judge.pk).update(
        run_claim="a" * 32, run_claimed_at=timezone.now() - timedelta(seconds=30), **holder
    )
    return judge


@pytest.mark.django_db
def test_a_live_claim_is_refused_naming_its_holder_and_when_it_counts_as_stopped():
    owner = make_user("res", role="researcher")
    other = Job.objects.create(
        kind=Job.JUDGE_RUN, created_by=owner, label="Judge rule with m on \u201cb\u201d"
    )
    cases = [
        ({"run_claim_worker": "box:41"}, None, "run_judge on the command line (process box:41).", "Ctrl-C"),
        (
            {"run_claim_worker": "box:42", "run_claim_job": other.pk},
            None,
            "the judge-run job \u201cJudge rule with m on \u201cb\u201d\u201d (process box:42).",
            "stop it on its job page",
        ),
        (
            {"run_claim_worker": "box:43", "run_claim_job": other.pk},
            other.pk,
            "an earlier attempt of this job (process box:43).",
            "This attempt called nothing",
        ),
    ]
    for n, (holder, job_id, who, advice) in enumerate(cases):
        judge = _claimed(f"j{n}", **holder)
        with pytest.raises(JudgeBusy) as refused:
            judge_run_claim(judge, job_id=job_id)
        message = str(refused.value)
        stale = Judge.objects.get(pk=judge.pk).run_claimed_at + CLAIM_STALE_AFTER
        assert message.startswith(f"judge \u201cj{n}\u201d is being run by another process: {who}")
        assert f"counts as stopped from {stale:%H:%M:%S} UTC (in " in message and advice in message
        wait = int(re.search(r"\(in (\d+) s\)", message).group(1))
        assert 85 <= wait <= 91  # claimed 30 s ago, stale after 120 s
        assert message.endswith("A rerun calls only what is still missing.")
        assert Judge.objects.get(pk=judge.pk).run_claim == "a" * 32  # the refusal took nothing


@pytest.mark.django_db
def test_a_busy_web_run_fails_with_one_grammatical_message(
    client, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-busy-123456789")
    make_batch("busy", n_items=2)
    client.force_login(make_user("res", role="researcher"))
    form = {
        "batch": "busy",
        "template": "hub_answer_correctness",
        "model": "fake-1",
        "key_env": "OPENAI_API_KEY",
        "concurrency": "2",
        "price_in": "0",
        "price_out": "0",
        "judge": "busy-judge",
    }
    with FakeJudge() as fake:
        with django_capture_on_commit_callbacks(execute=True):
            client.post("/judges/run/", {**form, "base_url": fake.url})
        Judge.objects.filter(name="busy-judge").update(
            run_claim="b" * 32, run_claimed_at=timezone.now(), run_claim_worker="box:7"
        )
        with django_capture_on_commit_callbacks(execute=True):
            client.post("/judges/run/", {**form, "base_url": fake.url})
    first, busy = Job.objects.order_by("created_at")
    assert first.state == Job.DONE and busy.state == Job.FAILED and fake.calls == 2
    assert "run_judge on the command line (process box:7)." in busy.message
    assert "missing Calls" not in busy.message and busy.message.endswith(".")
    page = client.get(reverse("job_status", args=[busy.pk])).content.decode()
    assert "run_judge on the command line (process box:7)." in page


@pytest.mark.django_db
def test_reclaiming_a_dead_job_frees_only_the_claim_of_its_own_worker():
    owner = make_user("res", role="researcher")
    dead = {
        "state": Job.RUNNING,
        "worker": "elsewhere.example:1",
        "heartbeat_at": timezone.now() - timedelta(hours=1),
    }
    job = Job.objects.create(kind=Job.JUDGE_RUN, created_by=owner, label="a run", **dead)
    mine = _claimed("mine", run_claim_worker="elsewhere.example:1", run_claim_job=job.pk)
    # Held by the same job's attempt in another process (a worker that picked it up since): not this one's to free.
    newer = _claimed("newer", run_claim_worker="elsewhere.example:2", run_claim_job=job.pk)
    cli = _claimed("cli", run_claim_worker="elsewhere.example:1")
    assert job_reclaim(job=job).state == Job.FAILED
    assert Judge.objects.get(pk=mine.pk).run_claim == ""
    assert Judge.objects.get(pk=newer.pk).run_claim and Judge.objects.get(pk=cli.pk).run_claim
