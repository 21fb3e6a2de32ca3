"""A judge run started on the Judges page: a background job that can be watched and stopped."""

from __future__ import annotations

import threading

import pytest

from annotator.judges.services import jobs as judge_jobs
from annotator.models import Job, JudgeCall
from tests.factories import make_batch, make_user
from tests.fake_judge import FakeJudge


def form(url, **extra):
    return {
        "batch": "web",
        "template": "hub_answer_correctness",
        "base_url": url,
        "model": "fake-1",
        "key_env": "OPENAI_API_KEY",
        "concurrency": "4",
        "price_in": "2.5",
        "price_out": "10",
        **extra,
    }


@pytest.mark.django_db
def test_a_researcher_starts_a_run_and_watches_it_finish(
    client, django_capture_on_commit_callbacks, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-web-123456789")
    make_batch("web", n_items=6)
    client.force_login(make_user("res", role="researcher"))
    assert b"Run a judge" in client.get("/judges/").content
    with FakeJudge() as fake, django_capture_on_commit_callbacks(execute=True):
        response = client.post("/judges/run/", form(fake.url))
    job = Job.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/jobs/{job.pk}/"
    assert job.state == Job.DONE and JudgeCall.objects.filter(status="ok").count() == 6
    assert job.progress["done"] == job.progress["total"] == 6 and job.progress["cost"] > 0
    assert "sk-web-123456789" not in str(job.params) and job.params["key_env"] == "OPENAI_API_KEY"
    assert all(r["auth"] == "Bearer sk-web-123456789" for r in fake.requests)
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "Done" in page and "6 / 6" in page and "Estimated cost" in page
    judges_page = client.get("/judges/").content.decode()
    assert "Your runs" in judges_page and f"/jobs/{job.pk}/" in judges_page and "6 / 6" in judges_page


@pytest.mark.django_db
def test_only_allowed_key_variables_and_only_researchers(client):
    make_batch("web", n_items=1)
    client.force_login(make_user("ann", role="annotator"))
    assert client.post("/judges/run/", form("http://127.0.0.1:9")).status_code in (302, 403)
    client.force_login(make_user("res", role="researcher"))
    response = client.post("/judges/run/", form("http://127.0.0.1:9", key_env="SECRET_KEY"))
    assert (
        response.status_code == 400 and b"SECRET_KEY is not one of the available choices" in response.content
    )
    assert not Job.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_stopping_a_run_keeps_every_finished_call_and_starting_again_resumes(client, monkeypatch):
    monkeypatch.setattr(judge_jobs, "POLL_SECONDS", 0.0)
    make_batch("web", n_items=40)
    user = make_user("res", role="researcher")
    client.force_login(user)

    pressed, lock = [], threading.Lock()

    def reply(prompt):
        with lock:  # the researcher presses "Stop the run" once, during the fifth call
            if fake.calls >= 5 and not pressed:
                pressed.append(Job.objects.update(cancel_requested=True))
        return '{"score": 1.0, "reason": "ok"}'

    with FakeJudge(reply, latency=0.05) as fake:
        client.post("/judges/run/", form(fake.url, concurrency="2"))
        job = Job.objects.get()
        assert job.state == Job.CANCELLED and "Start the run again" in job.message
        saved = JudgeCall.objects.count()
        assert pressed == [1] and saved == sum(fake.answered.values()) and 5 <= saved <= 10
        response = client.post(f"/jobs/{job.pk}/try-again/")
        assert response.status_code == 302
    job.refresh_from_db()
    assert job.state == Job.DONE and JudgeCall.objects.count() == 40
    assert max(fake.answered.values()) == 1 and fake.calls == 40


@pytest.mark.django_db
def test_a_queued_run_is_cancelled_at_once(client):
    make_batch("web", n_items=1)
    user = make_user("res", role="researcher")
    client.force_login(user)
    job = Job.objects.create(kind=Job.JUDGE_RUN, created_by=user, label="x", params={})
    client.post(f"/jobs/{job.pk}/stop/")
    job.refresh_from_db()
    assert job.state == Job.CANCELLED and job.message == "Cancelled before it started."
