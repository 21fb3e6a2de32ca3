"""Judge runs started on the Judges page: every option of the command that a researcher needs, progress while
the run goes, and failure shown as failure."""

from __future__ import annotations

import json

import pytest
from django.utils import timezone

from annotator.judges.services import jobs as judge_jobs
from annotator.models import Job, Judge, JudgeCall, PairwiseVerdict
from annotator.selectors.jobs import this_worker
from annotator.services.job_runner import _update
from tests.annotator.api.conftest import ApiClient, token_for
from tests.factories import make_batch, make_user
from tests.fake_judge import FakeJudge, always


def form(url, **extra):
    return {
        "batch": "web",
        "template": "hub_answer_correctness",
        "base_url": url,
        "model": "fake-1",
        "key_env": "OPENAI_API_KEY",
        "concurrency": "2",
        **extra,
    }


def start(client, captured, data):
    with captured(execute=True):
        return client.post("/judges/run/", data)


@pytest.mark.django_db
def test_the_form_offers_pairwise_swap_samples_temperature_and_the_judge_name(researcher):
    page = researcher.get("/judges/").content.decode()
    for name in ("pairwise", "swap", "samples", "temperature", "judge", "baseline_system", "enhanced_system"):
        assert f'name="{name}"' in page
    assert "geval_pairwise (pairwise)" in page


@pytest.mark.django_db
def test_a_pairwise_swapped_run_under_its_own_name(researcher, django_capture_on_commit_callbacks):
    make_batch("web", n_items=4, systems=("base", "new"))
    verdict = {
        c: {"score": 4, "reasoning": "ok"}
        for c in ("accuracy", "completeness", "clarity", "actionability", "relevance")
    }
    verdict["overall"] = {"baseline_score": 3, "enhanced_score": 4, "winner": "enhanced", "confidence": 0.8}
    with FakeJudge(lambda p: json.dumps(verdict)) as fake:
        response = start(
            researcher,
            django_capture_on_commit_callbacks,
            form(
                fake.url,
                template="geval_pairwise",
                pairwise="on",
                baseline_system="base",
                enhanced_system="new",
                swap="on",
                judge="My pairwise judge",
            ),
        )
    job = Job.objects.get()
    assert response.status_code == 302 and job.state == Job.DONE, job.message
    assert job.params["swap"] is True and job.params["judge"] == "My pairwise judge"
    assert Judge.objects.get().name == "My pairwise judge"
    assert JudgeCall.objects.count() == 4 and PairwiseVerdict.objects.count() == 4  # 2 pairs × 2 orders


@pytest.mark.django_db
def test_a_finished_run_links_to_where_its_scores_are_read(researcher, django_capture_on_commit_callbacks):
    """The finished run's page offered only 'Back to judges'; the scores are read on the batch's
    judges' calibration, so the page links there and the link opens."""
    batch = make_batch("web", n_items=2)
    with FakeJudge() as fake:
        start(researcher, django_capture_on_commit_callbacks, form(fake.url))
    job = Job.objects.get()
    assert job.state == Job.DONE, job.message
    page = researcher.get(f"/jobs/{job.pk}/").content.decode()
    target = f"/reports/{batch.pk}/judges/"
    assert f'href="{target}"' in page
    assert "hub_answer_correctness/fake-1" in researcher.get(target).content.decode()


@pytest.mark.django_db
def test_samples_at_a_temperature(researcher, django_capture_on_commit_callbacks):
    make_batch("web", n_items=2)
    with FakeJudge() as fake:
        start(researcher, django_capture_on_commit_callbacks, form(fake.url, samples="3", temperature="0.7"))
    assert Job.objects.get().state == Job.DONE
    assert sorted(JudgeCall.objects.values_list("sample", flat=True)) == [0, 0, 1, 1, 2, 2]
    assert {r["body"]["temperature"] for r in fake.requests} == {0.7}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"template": "geval_pairwise"}, "compares two responses: tick Pairwise"),
        ({"pairwise": "on", "baseline_system": "a", "enhanced_system": "b"}, "needs a pairwise template"),
        ({"template": "geval_pairwise", "pairwise": "on", "baseline_system": "a"}, "Name the system_id"),
        (
            {"template": "geval_pairwise", "pairwise": "on", "baseline_system": "a", "enhanced_system": "a"},
            "other than the baseline",
        ),
        ({"swap": "on"}, "tick Pairwise too"),
        ({"samples": "3"}, "set a temperature above 0"),
        ({"samples": "99", "temperature": "1"}, "less than or equal to 20"),
        ({"temperature": "-1"}, "greater than or equal to 0"),
        ({"judge": "bad\u200bname"}, "no control or invisible characters"),
        ({"judge": "x" * 300}, "at most"),
    ],
)
def test_bad_combinations_are_refused_before_anything_is_queued(researcher, extra, message):
    make_batch("web", n_items=1)
    response = researcher.post("/judges/run/", form("http://127.0.0.1:9", **extra))
    assert response.status_code == 400 and message in response.content.decode()
    assert not Job.objects.exists()


@pytest.mark.django_db
def test_a_run_in_which_every_call_failed_is_failed_with_its_first_errors_and_a_raw_output(
    researcher, django_capture_on_commit_callbacks
):
    make_batch("web", n_items=3)
    with FakeJudge(lambda p: "<b>I refuse</b> to grade this.") as fake:
        start(researcher, django_capture_on_commit_callbacks, form(fake.url))
    job = Job.objects.get()
    assert job.state == Job.FAILED and job.message.startswith("No call gave a score (3 of 3 failed")
    assert [e["item"] for e in job.errors] and all("no JSON object" in e["message"] for e in job.errors)
    assert job.progress["sample_raw_output"] == "<b>I refuse</b> to grade this."
    page = researcher.get(f"/jobs/{job.pk}/").content.decode()
    assert "Failed" in page and "First failed calls" in page and "web-0" in page
    assert "&lt;b&gt;I refuse&lt;/b&gt;" in page and "<b>I refuse</b>" not in page
    assert "Try again" in page
    researcher.post(f"/jobs/{job.pk}/try-again/")
    assert Job.objects.get().params["retry_failed"] is True  # trying again calls the failed items again


@pytest.mark.django_db
def test_a_run_with_some_failed_calls_shows_partly_failed(researcher, django_capture_on_commit_callbacks):
    make_batch("web", n_items=4)

    def fault(n, prompt):
        return 400 if "(answer 2)" in prompt else None

    with FakeJudge(fault=fault) as fake:
        start(researcher, django_capture_on_commit_callbacks, form(fake.url))
    job = Job.objects.get()
    assert job.state == Job.DONE and job.message.startswith("Partly failed: 1 of 4 calls gave no score")
    assert job.errors == [
        {
            "row": None,
            "column": None,
            "item": "web-2",
            "message": "item web-2: call failed: HTTP 400; the endpoint said: fault 400",
        }
    ]
    page = researcher.get(f"/jobs/{job.pk}/").content.decode()
    assert (
        "Partly failed" in page and "item web-2: call failed: HTTP 400; the endpoint said: fault 400" in page
    )
    api = ApiClient(token_for(Job.objects.get().created_by)).get(f"/jobs/{job.pk}")
    assert api.status_code == 200 and api.json()["errors"][0]["message"].startswith("item web-2: call failed")


@pytest.mark.django_db
def test_a_refused_key_fails_the_job_saying_what_the_endpoint_said(
    researcher, django_capture_on_commit_callbacks
):
    make_batch("web", n_items=2)
    with FakeJudge(fault=always(401)) as fake:
        start(researcher, django_capture_on_commit_callbacks, form(fake.url))
    job = Job.objects.get()
    assert job.state == Job.FAILED and "refused the API key (HTTP 401)" in job.message


@pytest.mark.django_db
def test_progress_is_written_while_the_run_goes(monkeypatch):
    monkeypatch.setattr(judge_jobs, "POLL_SECONDS", 0.05)
    batch = make_batch("web", n_items=8)
    user = make_user("res", role="researcher")
    written = []

    def update(job, **fields):
        if "progress" in fields and not fields.get("finished_at"):
            written.append(fields["progress"]["done"])
        _update(job, **fields)

    with FakeJudge(latency=0.08) as fake:
        job = Job.objects.create(
            kind=Job.JUDGE_RUN,
            created_by=user,
            label="run",
            params={
                "batch_id": batch.pk,
                "template": "hub_answer_correctness",
                "base_url": fake.url,
                "model": "m",
                "key_env": "OPENAI_API_KEY",
                "concurrency": 1,
                "retry_failed": False,
                "price_in": 0,
                "price_out": 0,
            },
        )
        judge_jobs.judge_job_run(job, update)
    assert Job.objects.get().state == Job.DONE
    assert [d for d in written if 0 < d < 8], f"no progress before the end: {written}"


@pytest.mark.django_db
def test_a_cancelled_run_shows_no_time_left(researcher):
    user = make_user("res2", role="researcher")
    progress = {
        "total": 40,
        "skipped": 0,
        "done": 10,
        "scored": 10,
        "failed": 0,
        "retries": 0,
        "tokens_in": 1,
        "tokens_out": 1,
        "cost": None,
        "eta_seconds": 20,
    }
    cancelled = Job.objects.create(
        kind=Job.JUDGE_RUN,
        created_by=user,
        label="run",
        state=Job.CANCELLED,
        progress=progress,
        message="Cancelled.",
    )
    researcher.force_login(user)
    page = researcher.get(f"/jobs/{cancelled.pk}/").content.decode()
    assert "10 / 40" in page and "Time left" not in page
    # a run whose worker is alive (this process, beating now): the page shows its time left
    running = Job.objects.create(
        kind=Job.JUDGE_RUN,
        created_by=user,
        label="run",
        state=Job.RUNNING,
        progress=progress,
        worker=this_worker(),
        heartbeat_at=timezone.now(),
    )
    assert "about 20 s" in researcher.get(f"/jobs/{running.pk}/").content.decode()


@pytest.mark.django_db
def test_a_web_run_leaves_unknown_calls_alone_unless_ticked(researcher, django_capture_on_commit_callbacks):
    make_batch("web", n_items=3)
    with FakeJudge() as fake:
        start(researcher, django_capture_on_commit_callbacks, form(fake.url))
        JudgeCall.objects.filter(item__item_id="web-1").update(
            status=JudgeCall.SENT
        )  # as a killed run leaves it
        fake.calls = 0
        start(researcher, django_capture_on_commit_callbacks, form(fake.url))
        job = Job.objects.order_by("-created_at").first()
        assert fake.calls == 0 and "1 call was sent by a run that was killed" in job.message
        assert (
            "Call again the calls whose outcome is unknown"
            in researcher.get(f"/jobs/{job.pk}/").content.decode()
        )
        start(researcher, django_capture_on_commit_callbacks, form(fake.url, retry_unknown="on"))
        assert fake.calls == 1
    assert set(JudgeCall.objects.values_list("status", flat=True)) == {"ok"}


@pytest.mark.django_db
def test_an_anthropic_run_from_the_form_then_a_second_name_is_served_from_the_cache(
    researcher, django_capture_on_commit_callbacks, monkeypatch, settings
):
    from tests.fake_anthropic import FakeAnthropic

    settings.ANNOTATOR_JUDGE_KEY_ENVS = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY"]
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-web-123456789")
    make_batch("web", n_items=3)
    assert 'name="provider"' in researcher.get("/judges/").content.decode()
    with FakeAnthropic(key="sk-ant-web-123456789") as fake:
        for name in ("first", "second"):
            start(
                researcher,
                django_capture_on_commit_callbacks,
                form(
                    fake.url,
                    provider="anthropic",
                    key_env="ANTHROPIC_API_KEY",
                    model="claude-test",
                    judge=name,
                ),
            )
        start(
            researcher,
            django_capture_on_commit_callbacks,
            form(
                fake.url,
                provider="anthropic",
                key_env="ANTHROPIC_API_KEY",
                model="claude-test",
                judge="third",
                no_cache="on",
            ),
        )
    jobs = sorted(Job.objects.all(), key=lambda j: j.params["judge"])  # first, second, third
    assert [j.state for j in jobs] == [Job.DONE] * 3, [j.message for j in jobs]
    assert [(j.progress["paid"], j.progress["cached"]) for j in jobs] == [(3, 0), (0, 3), (3, 0)]
    assert fake.calls == 6 and Judge.objects.get(name="first").params["provider"] == "anthropic"


@pytest.mark.django_db
def test_the_form_refuses_an_unknown_provider_and_a_missing_base_url(researcher):
    make_batch("web", n_items=1)
    response = researcher.post("/judges/run/", form("", provider="gemini"))
    assert (
        response.status_code == 400
        and "gemini is not one of the available choices" in response.content.decode()
    )
    response = researcher.post("/judges/run/", form("", provider="openai"))
    assert response.status_code == 400 and "Give the endpoint" in response.content.decode()
    assert not Job.objects.exists()


@pytest.mark.django_db
def test_the_form_starts_on_a_scoring_template_and_states_the_caps_bound(researcher):
    """Before: the first template offered was geval_pairwise, which a plain run refuses."""
    page = researcher.get("/judges/").content.decode()
    assert '<option value="hcs_rubric" selected>' in page
    assert 'value="geval_pairwise" selected' not in page
    assert "1,024 unless given below" in page and 'name="max_cost"' in page and 'name="currency"' in page


@pytest.mark.django_db
def test_a_dry_run_from_the_form_estimates_and_calls_nothing(researcher, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-web-123456789")
    make_batch("web", n_items=4)
    with FakeJudge() as fake:
        response = researcher.post(
            "/judges/run/",
            form(fake.url, dry_run="1", price_in="2.5", price_out="10", currency="eur", max_cost="0.5"),
        )
        assert fake.calls == 0
    page = response.content.decode()
    assert response.status_code == 200 and not Job.objects.exists() and not JudgeCall.objects.exists()
    assert "Dry run, nothing was called: 4 calls to pay for" in page
    assert "estimated cost" in page and " EUR (at 2.5 in / 10 out" in page
    assert "With a cost cap of 0.5000 EUR: every call is sent max_tokens 1,024" in page
    # A cap needs prices to count the spend with.
    refused = researcher.post("/judges/run/", form("http://127.0.0.1:9", max_cost="0.5"))
    assert refused.status_code == 400 and b"A cost cap needs the prices" in refused.content
    assert not Job.objects.exists()


@pytest.mark.django_db
def test_a_capped_run_from_the_form_sends_the_bound_and_stops_at_the_cap(
    researcher, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-web-123456789")
    make_batch("web", n_items=20)
    long = '{"score": 0.5, "reason": "' + "Weighs the answer. " * 300 + '"}'  # ~1,400 tokens, cut at 1,024
    with FakeJudge(lambda p: long) as fake:
        start(
            researcher,
            django_capture_on_commit_callbacks,
            form(fake.url, price_in="2.5", price_out="10", max_cost="0.05"),
        )
        sent = [r["body"]["max_tokens"] for r in fake.requests]
    job = Job.objects.get()
    assert set(sent) == {1024} and 0 < len(sent) < 20
    assert job.state == Job.CANCELLED and job.message.startswith("Stopped at the cost cap.")
    spent = sum(c.cost for c in JudgeCall.objects.all())
    assert spent <= 0.05 + 1024 * 10 / 1e6
