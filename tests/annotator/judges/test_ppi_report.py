"""PPI++ in the report: the JSON key judges.<judge>.<dimension>.ppi, per system, the page and the judge card."""

import json

import numpy as np
import pytest
from django.urls import reverse
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate
from scipy.stats import t as t_dist

from annotator.models import Annotation, AnnotatorStanding, Judge, JudgeScore
from annotator.reports.selectors.batch_report import batch_report
from hcs.rubric import Rubric
from tests.factories import PASSWORD, in_queue_order, make_annotation, make_batch, make_user

DIMS = ("coherence", "relevance", "instruction_following", "safety_compliance", "fluency")
PPI_KEYS = {
    "estimate",
    "ci95",
    "ci95_superpopulation",
    "n_labelled",
    "n_unlabelled",
    "lambda",
    "human_only",
    "judge_only",
}


@pytest.fixture
def study(db):
    """40 items in two systems in a random queue order; people label the first 24 the queue hands out (two
    annotators each, a third excluded who rated every item 1), a judge scores every item on every dimension
    and gives no overall score."""
    batch = make_batch("ppi", n_items=40, k=3, systems=("sys-a", "sys-b"), order_seed=11)
    rng = np.random.default_rng(3)
    people = [make_user("p0"), make_user("p1")]
    outcast = make_user("outcast")
    judge = Judge.objects.create(name="<i>judge</i>")
    human: dict[str, dict[str, list[int]]] = {}
    items = in_queue_order(batch)
    for n, item in enumerate(items):
        quality = int(rng.integers(1, 6))
        if n < 24:
            for user in people:
                scores = {d: int(np.clip(quality + rng.integers(-1, 2), 1, 5)) for d in DIMS}
                make_annotation(item, user, scores, source=Annotation.Source.WEB)
                for d, v in scores.items():
                    human.setdefault(item.item_id, {}).setdefault(d, []).append(v)
            make_annotation(item, outcast, dict.fromkeys(DIMS, 1), source=Annotation.Source.WEB)
        JudgeScore.objects.bulk_create(
            JudgeScore(judge=judge, item=item, dimension=d, raw_value=v, scale_min=1, scale_max=5, value=v)
            for d in DIMS
            for v in [float(np.clip(quality + 0.5 + rng.normal(0, 0.7), 1, 5))]
        )
    AnnotatorStanding.objects.create(batch=batch, annotator=outcast, excluded=True, exclusion_reason="test")
    return batch, judge, items, human


def _reference(items, human, judged, dimension, system=None):
    """ppi_py on the same split: labelled = items with a human value, unlabelled = the rest."""
    weights = {d.key: d.weight for d in Rubric.default().dimensions}
    y, f, fu = [], [], []
    for item in items:
        if system and item.system_id != system:
            continue
        if dimension == "overall":
            score = sum(w * judged[(item.pk, d)] for d, w in weights.items())
            values = human.get(item.item_id)
            h = (
                None
                if values is None
                else np.mean([sum(w * values[d][a] for d, w in weights.items()) for a in range(2)])
            )
        else:
            score = judged[(item.pk, dimension)]
            h = np.mean(human[item.item_id][dimension]) if item.item_id in human else None
        if h is None:
            fu.append(score)
        else:
            y.append(h)
            f.append(score)
    return np.array(y), np.array(f), np.array(fu)


def _login(client, user):
    assert client.login(username=user.username, password=PASSWORD)


def test_json_ppi_equals_ppi_py_overall_per_dimension_and_per_system(client, researcher_user, study):
    batch, judge, items, human = study
    judged = {(s.item_id, s.dimension): s.value for s in JudgeScore.objects.filter(judge=judge)}
    _login(client, researcher_user)
    data = json.loads(client.get(reverse("report_export", args=[batch.pk, "json"])).content)
    section = data["judges"]["<i>judge</i>"]
    for dimension in (*DIMS, "overall"):
        ppi = section[dimension]["ppi"]
        assert set(ppi) == PPI_KEYS | {"sample", "sample_why"}
        # Labelled through the queue's random order: the first 24 it hands out.
        assert ppi["sample"] == "random_order" and "seed 11" in ppi["sample_why"]
        assert set(ppi["human_only"]) == {"estimate", "ci95", "ci95_superpopulation"} and set(
            ppi["judge_only"]
        ) == {"estimate"}
        for system in (None, "sys-a", "sys-b"):
            got = ppi if system is None else section[dimension]["ppi_by_system"][system]
            assert set(got) - {"sample", "sample_why"} == PPI_KEYS
            y, f, fu = _reference(items, human, judged, dimension, system)
            assert (got["n_labelled"], got["n_unlabelled"]) == (len(y), len(fu))
            assert got["n_labelled"] == (
                24 if system is None else 12
            )  # the excluded annotator labels nothing
            assert got["estimate"] == pytest.approx(float(ppi_mean_pointestimate(y, f, fu)[0]), abs=1e-6)
            lo, hi = ppi_mean_ci(y, f, fu, alpha=0.05)
            assert got["ci95_superpopulation"] == pytest.approx(
                [float(lo[0]), float(hi[0])], abs=1e-11
            )  # float rounding only
            # the batch's own mean: SE sqrt((1 − n/M) s²(e) / n), e = y − λ (M/N) f, s² and Student's t on
            # n − 2 degrees of freedom since λ is tuned on these labels (docs/ppi.md)
            n, big_n = len(y), len(fu)
            e = y - got["lambda"] * (n + big_n) / big_n * f
            half = t_dist.ppf(0.975, n - 2) * np.sqrt((1 - n / (n + big_n)) * e.var(ddof=2) / n)
            assert got["ci95"] == pytest.approx([got["estimate"] - half, got["estimate"] + half], rel=1e-9)
            assert got["human_only"]["estimate"] == pytest.approx(y.mean())
            assert got["judge_only"]["estimate"] == pytest.approx(np.r_[f, fu].mean())
            assert 0 <= got["lambda"] <= 1
    assert section["coherence"]["ppi"]["lambda"] > 0  # the judge tracks people, so it earns weight


def test_report_page_and_judge_card_show_the_panel(client, researcher_user, study):
    batch, judge, _, _ = study
    _login(client, researcher_user)
    page = client.get(reverse("report_judges", args=[batch.pk])).content.decode()
    assert "Human mean: human only, judge only and PPI++" in page
    assert "Labels saved" in page and "Overall HCS by system, PPI++" in page
    # both intervals, named: the batch's on the first line, the population's below it
    assert "Each 95 % CI is for the mean of <strong>this batch's items</strong>" in page
    assert (
        page.count('<span class="muted">population [') >= 2 * 4
    )  # human only and PPI++, 3 dimensions + overall
    assert "&lt;i&gt;judge&lt;/i&gt;" in page and "<i>judge</i>" not in page
    # the Systems table's interval for the same per-system mean is named for what it is
    body = client.get(reverse("report_batch", args=[batch.pk])).content.decode()
    assert "95 % CI, population (bootstrap)" in body and "interval for this batch's own items" in body
    card = client.get(reverse("judge_card", args=[batch.pk, judge.pk])).content.decode()
    assert 'id="ppi"' in card and "Labels saved" in card
    report = batch_report(batch=batch, n_resamples=20)
    overall = next(p for p in report.sections["judges"].ppi if p.dimension == "overall").overall
    assert f"{overall.estimate:.3f}" in card and f"{overall.width:.3f}" in card


def test_without_labels_the_key_is_null_and_the_page_says_why(client, researcher_user, db):
    batch = make_batch("bare", n_items=6)
    judge = Judge.objects.create(name="lonely")
    item = batch.items.first()
    make_annotation(item, make_user("solo"), dict.fromkeys(DIMS, 3))
    JudgeScore.objects.bulk_create(
        JudgeScore(
            judge=judge, item=i, dimension="coherence", raw_value=3, scale_min=1, scale_max=5, value=3.0
        )
        for i in batch.items.all()
    )
    _login(client, researcher_user)
    data = json.loads(client.get(reverse("report_export", args=[batch.pk, "json"])).content)
    assert data["judges"]["lonely"]["coherence"]["ppi"] is None
    page = client.get(reverse("report_judges", args=[batch.pk])).content.decode()
    assert "Fewer than two items have both a judge score and a human label" in page


def test_judges_csv_lists_calibration_rows_only(client, researcher_user, study):
    """The derived overall entry carries PPI++ and no calibration: the CSV table has no row for it."""
    batch, _, _, _ = study
    _login(client, researcher_user)
    response = client.get(reverse("report_export", args=[batch.pk, "judges.csv"]))
    assert response.status_code == 200
    rows = response.content.decode().splitlines()
    assert len(rows) == 1 + len(DIMS) and not any(",overall," in r for r in rows)
