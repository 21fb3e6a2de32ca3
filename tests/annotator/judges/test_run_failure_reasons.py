"""A judge run whose calls fail says why, with counts, where the researcher looks; each run's label names
its judge."""

from __future__ import annotations

import json

import pytest
from django.utils import timezone

from annotator.judges.engine.progress import RunProgress
from annotator.judges.selectors.listing import judge_runs_recent
from annotator.models import Job
from annotator.selectors.jobs import this_worker
from hcs.rubric import Rubric
from tests.annotator.judges.test_web_runs import form as web_form
from tests.annotator.judges.test_web_runs import start
from tests.factories import make_batch, make_user
from tests.fake_judge import FakeJudge

SCALE = "score 0.75 is outside the declared scale 1\u20135"


def form(url, **extra):
    return web_form(url, **{"template": "hcs_rubric", "model": "fake-model", **extra})


def every_dimension(score, **extra) -> str:
    """An hcs_rubric answer giving ``score`` on each dimension of the default rubric, by name."""
    return json.dumps({d: {"score": score, **extra} for d in Rubric.default().dimension_keys})


@pytest.mark.django_db
def test_every_call_failing_names_the_reason_with_its_count_and_links_the_calls(
    researcher, django_capture_on_commit_callbacks
):
    batch = make_batch("web", n_items=4)
    with FakeJudge(lambda prompt: every_dimension(0.75)) as fake:  # outside hcs_rubric's 1–5 on every one
        start(researcher, django_capture_on_commit_callbacks, form(fake.url))
    job = Job.objects.get()
    assert job.state == Job.FAILED
    # One reason per call, not one per dimension: 4 calls failed, each on all five dimensions.
    assert f"4 failed: {SCALE} (4)" in job.message
    assert job.progress["failure_reasons"] == [{"reason": SCALE, "count": 4}]
    page = researcher.get(f"/jobs/{job.pk}/").content.decode()
    assert f"<li>{SCALE} (4)</li>" in page
    export = f"/reports/{batch.pk}/export/judge_calls.jsonl"
    assert f'href="{export}"' in page
    assert researcher.get(export).status_code == 200
    judges_page = researcher.get("/judges/").content.decode()
    assert f'href="{export}"' in judges_page and "calls in web" in judges_page


@pytest.mark.django_db
def test_a_reason_quoting_the_model_output_is_escaped(researcher, django_capture_on_commit_callbacks):
    make_batch("web", n_items=2)
    with FakeJudge(lambda prompt: every_dimension("<b>high</b>")) as fake:
        start(researcher, django_capture_on_commit_callbacks, form(fake.url))
    job = Job.objects.get()
    assert job.progress["failure_reasons"][0]["count"] == 2
    assert "<b>high</b>" in job.progress["failure_reasons"][0]["reason"]
    page = researcher.get(f"/jobs/{job.pk}/").content.decode()
    assert "&lt;b&gt;high&lt;/b&gt;" in page and "<b>high</b>" not in page


@pytest.mark.django_db
def test_a_partly_failed_run_counts_each_reason(researcher, django_capture_on_commit_callbacks):
    make_batch("web", n_items=5)

    def reply(prompt):
        if "(answer 1)" in prompt or "(answer 2)" in prompt:
            return every_dimension(9)
        if "(answer 3)" in prompt:
            return "no score here"
        return every_dimension(4, reason="Fine.")

    with FakeJudge(reply) as fake:
        start(researcher, django_capture_on_commit_callbacks, form(fake.url))
    job = Job.objects.get()
    assert job.state == Job.DONE and job.message.startswith("Partly failed: 3 of 5 calls gave no score")
    reasons = {r["reason"]: r["count"] for r in job.progress["failure_reasons"]}
    assert sorted(reasons.values()) == [1, 2], reasons
    assert "score 9 is outside the declared scale 1\u20135" in reasons
    most_common = job.progress["failure_reasons"][0]
    assert most_common == {"reason": "score 9 is outside the declared scale 1\u20135", "count": 2}
    assert f"3 failed: {most_common['reason']} (2); " in job.message


def test_the_running_summary_names_the_most_common_reasons_first_and_counts_the_rest():
    state = RunProgress(total=10)
    state.add(ok=True, attempts=1, tokens_in=1, tokens_out=1)
    for _ in range(3):
        state.add(
            ok=False, attempts=1, tokens_in=1, tokens_out=1, problems=[("coherence", "a"), ("fluency", "a")]
        )
    state.add(ok=False, attempts=1, tokens_in=1, tokens_out=1, problems=[("", "b")])
    state.add(ok=False, attempts=1, tokens_in=1, tokens_out=1, problems=[("", "c")])
    state.add(ok=False, attempts=1, tokens_in=1, tokens_out=1, problems=[("", "d")])
    state.add(ok=False, attempts=1, tokens_in=None, tokens_out=None)
    assert state.summary(reasons=True).startswith(
        "8/10 calls, 7 failed: a (3); b (1); c (1); 2 other reasons, 0 retries"
    )
    assert "2 other reasons" in state.summary(reasons=True)
    assert state.as_dict()["failure_reasons"][0] == {"reason": "a", "count": 3}
    assert state.summary().startswith("8/10 calls, 7 failed, 0 retries")  # the command's line, as before
    assert RunProgress(total=2).summary(reasons=True).startswith("0/2 calls, 0 failed, 0 retries")


@pytest.mark.django_db
def test_two_judges_runs_of_one_template_and_model_are_told_apart(
    researcher, django_capture_on_commit_callbacks
):
    make_batch("web", n_items=1)
    with FakeJudge(lambda prompt: '{"score": 4}') as fake:
        start(researcher, django_capture_on_commit_callbacks, form(fake.url, judge="strict"))
        start(researcher, django_capture_on_commit_callbacks, form(fake.url))
    labels = sorted(Job.objects.values_list("label", flat=True))
    assert labels == [
        "Judge \u201chcs_rubric/fake-model\u201d: hcs_rubric with fake-model on \u201cweb\u201d",
        "Judge \u201cstrict\u201d: hcs_rubric with fake-model on \u201cweb\u201d",
    ]
    page = researcher.get("/judges/").content.decode()
    assert (
        "Judge \u201cstrict\u201d: hcs_rubric" in page and "Judge \u201chcs_rubric/fake-model\u201d:" in page
    )


@pytest.mark.django_db
def test_a_run_queued_before_labels_named_the_judge_is_listed_with_its_name():
    batch = make_batch("web", n_items=1)
    user = make_user("res", role="researcher")
    old = "Judge hcs_rubric with fake-model on \u201cweb\u201d"
    for name in ("lenient", ""):
        Job.objects.create(
            kind=Job.JUDGE_RUN,
            created_by=user,
            label=old,
            params={"batch_id": batch.pk, "template": "hcs_rubric", "model": "fake-model", "judge": name},
        )
    shown = sorted(run.display_label for run in judge_runs_recent(user=user))
    assert shown == [
        f"Judge \u201chcs_rubric/fake-model\u201d: {old[len('Judge ') :]}",
        f"Judge \u201clenient\u201d: {old[len('Judge ') :]}",
    ]
    assert Job.objects.filter(label=old).count() == 2  # the stored labels are left as they were


@pytest.mark.django_db
def test_a_running_run_lists_its_failure_reasons_under_failed(client):
    user = make_user("res", role="researcher")
    state = RunProgress(total=36)
    for _ in range(14):
        state.add(ok=False, attempts=1, tokens_in=1, tokens_out=1, problems=[("coherence", SCALE)])
    running = Job.objects.create(
        kind=Job.JUDGE_RUN,
        created_by=user,
        label="run",
        state=Job.RUNNING,
        progress=state.as_dict(),
        step=state.summary(),
        worker=this_worker(),
        heartbeat_at=timezone.now(),
    )
    client.force_login(user)
    page = client.get(f"/jobs/{running.pk}/").content.decode()
    assert "Running" in page and f"<li>{SCALE} (14)</li>" in page
    assert len(state.summary(reasons=True)) > len(state.summary())  # the step column keeps the short line
