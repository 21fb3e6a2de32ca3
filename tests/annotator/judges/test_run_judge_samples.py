"""run_judge --samples N: repeated calls at temperature > 0, kept as calls, read as the judge's self-consistency."""

import collections
import json
import threading

import pytest
from django.core.management import CommandError
from django.urls import reverse

from annotator.models import JudgeCall, JudgeScore
from tests.annotator.judges.test_judges_selector import _study
from tests.factories import PASSWORD
from tests.fake_judge import FakeJudge
from tests.judge_runs import run_judge


def _wobbly():
    """A judge whose score of the same prompt changes from call to call: 1.0, then 0.5, then 0.0."""
    seen, lock = collections.Counter(), threading.Lock()

    def reply(prompt):
        with lock:
            n = seen[prompt]
            seen[prompt] += 1
        return json.dumps({"hub_answer_correctness": (1.0, 0.5, 0.0)[n % 3], "reason": "varies"})

    return reply


def run(fake, *extra):
    run_judge(fake, "judged", "--concurrency", "1", *extra, model="m")


@pytest.mark.django_db
def test_samples_are_saved_as_calls_and_reported_as_self_consistency(client, researcher_user):
    batch, _, _ = _study(n_items=6)
    with FakeJudge(_wobbly()) as fake:
        run(fake, "--samples", "3", "--temperature", "0.7")
        assert fake.calls == 18
        run(fake, "--samples", "3", "--temperature", "0.7")
        assert fake.calls == 18  # every sample saved: a rerun calls nothing
    assert sorted(set(JudgeCall.objects.values_list("sample", flat=True))) == [0, 1, 2]
    assert JudgeScore.objects.count() == 6  # the judge's scores are sample 0's; repeats stay on their calls
    assert client.login(username=researcher_user.username, password=PASSWORD)
    data = json.loads(client.get(reverse("report_export", args=[batch.pk, "json"])).content)
    (judge,) = data["judges"]
    consistency = data["judges"][judge]["overall"]["self_consistency"]
    assert consistency["n_items"] == 6 and consistency["samples"] == 3
    # each item's three samples are 1.0, 0.5, 0.0 → 5, 3, 1 on the rubric's 1–5: sd 2
    assert consistency["mean_sd"] == pytest.approx(2.0)
    assert set(consistency["per_item_sd"]) == set(batch.items.values_list("item_id", flat=True))
    assert 0 < consistency["noise_share"] <= 1 and len(consistency["noise_share_ci95"]) == 2


@pytest.mark.django_db
def test_samples_need_temperature_and_a_scoring_template():
    _study(n_items=2)
    with FakeJudge(_wobbly()) as fake:
        with pytest.raises(CommandError, match="needs --temperature > 0"):
            run(fake, "--samples", "3")
        with pytest.raises(CommandError, match="--samples must be between 1 and 20"):
            run(fake, "--samples", "21", "--temperature", "1")
    assert fake.calls == 0
