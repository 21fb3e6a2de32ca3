"""Length bias and score use in the judges section of the JSON report export (judges.<judge>.<dimension>)."""

import json

import numpy as np
import pytest
from django.urls import reverse

from annotator.judges.selectors.judges import judges_report
from annotator.models import Item, Judge, JudgeScore
from annotator.reports.selectors.batch_report import report_arrays
from hcs.calibration.probes import length_bias
from tests.annotator.judges.test_judges_selector import _add_scores, _study
from tests.factories import PASSWORD


def _lengthen(batch, seed=4):
    """Give every item a response of random length; returns item_id → length."""
    rng = np.random.default_rng(seed)
    lengths = {}
    for item in batch.items.all():
        n = int(rng.integers(100, 4000))
        Item.objects.filter(pk=item.pk).update(response="x" * n)
        lengths[item.item_id] = n
    return lengths


@pytest.fixture
def verbose_judge(db):
    batch, _, human = _study(n_items=60)
    lengths = _lengthen(batch)
    mean = {i: float(np.mean(list(r.values()))) for i, r in human.items()}
    # values above 5 are allowed on the judge's own 0–10 scale; ``value`` is what calibration reads
    verbose = Judge.objects.create(name="verbose")
    JudgeScore.objects.bulk_create(
        JudgeScore(
            judge=verbose,
            item=item,
            dimension="coherence",
            raw_value=0,
            scale_min=0,
            scale_max=10,
            value=mean[item.item_id] + 0.5 * lengths[item.item_id] / 1000,
        )
        for item in batch.items.all()
    )
    _add_scores("two-level", batch, {i: 5.0 if mean[i] >= 3 else 1.0 for i in mean})
    return batch, human, lengths, mean


def test_json_export_has_length_bias_and_score_use(client, researcher_user, verbose_judge):
    batch, _, lengths, mean = verbose_judge
    assert client.login(username=researcher_user.username, password=PASSWORD)
    data = json.loads(client.get(reverse("report_export", args=[batch.pk, "json"])).content)
    probe = data["judges"]["verbose"]["coherence"]["length_bias"]
    # the judge adds exactly 0.5 per 1,000 characters on top of the human mean: OLS recovers it
    assert probe["coef_per_1000_chars"]["value"] == pytest.approx(0.5, abs=1e-6)
    assert probe["coef"] > 0 and probe["coef_ci95"][0] > 0
    assert probe["spearman"] > 0.9 and probe["ci95"][0] > 0.8
    items = sorted(mean)
    direct = length_bias(
        [lengths[i] for i in items],
        [mean[i] + 0.5 * lengths[i] / 1000 for i in items],
        [mean[i] for i in items],
        n_boot=1000,
    )
    assert probe["human_spearman"] == pytest.approx(direct.human_spearman, abs=1e-4)
    assert probe["spearman"] == pytest.approx(direct.spearman, abs=1e-4)
    assert len(probe["human_ci95"]) == 2 and probe["n"] == 60
    use = data["judges"]["two-level"]["coherence"]["score_use"]
    assert use["levels_used"] == 2 and use["few_levels"] is True
    assert use["judge_distribution"]["2"] == 0 and sum(use["judge_distribution"].values()) == 60
    assert sum(use["human_distribution"].values()) == 180
    assert data["judges"]["verbose"]["coherence"]["score_use"]["few_levels"] is False


def test_empty_response_leaves_length_bias_null(verbose_judge):
    batch, *_ = verbose_judge
    Item.objects.filter(pk=batch.items.first().pk).update(response="")
    section = judges_report(batch=batch, arrays=report_arrays(batch=batch), n_boot=50)
    assert section.to_json()["verbose"]["coherence"]["length_bias"] is None


def test_report_page_shows_probes_and_flags_two_levels(client, researcher_user, verbose_judge):
    batch, *_ = verbose_judge
    assert client.login(username=researcher_user.username, password=PASSWORD)
    # The judge sections load after the rest of the report page, from their own URL.
    assert (
        reverse("report_judges", args=[batch.pk])
        in client.get(reverse("report_batch", args=[batch.pk])).content.decode()
    )
    page = client.get(reverse("report_judges", args=[batch.pk])).content.decode()
    assert "Bias probes and score use" in page
    assert page.count("uses 2 levels only") == 1
