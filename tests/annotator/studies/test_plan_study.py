"""plan_study and the report's Plan panel: a batch as a pilot for N items × k annotators."""

import io
import json

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotator.models import Judge, JudgeScore
from annotator.reports.selectors.batch_report import batch_report
from annotator.studies.planning import JudgePlan, study_plan
from hcs.planning import plan_agreement
from tests.factories import PASSWORD, make_annotation, make_batch, make_user

DIMS = ("coherence", "relevance", "instruction_following", "safety_compliance", "fluency")
STATS = {"fleiss_kappa", "krippendorff_alpha_ordinal", "krippendorff_alpha_interval", "gwet_ac2"}


@pytest.fixture
def pilot(db):
    batch = make_batch("pilot", n_items=60, k=3)
    rng = np.random.default_rng(8)
    people = [make_user(f"r{n}") for n in range(3)]
    judge = Judge.objects.create(name="j")
    for item in batch.items.order_by("position"):
        quality = int(rng.integers(1, 6))
        for user in people:
            make_annotation(item, user, {d: int(np.clip(quality + rng.integers(-1, 2), 1, 5)) for d in DIMS})
        JudgeScore.objects.bulk_create(
            JudgeScore(
                judge=judge,
                item=item,
                dimension=d,
                raw_value=quality,
                scale_min=1,
                scale_max=5,
                value=float(quality),
            )
            for d in DIMS
        )
    return batch


def _plan(*args):
    out = io.StringIO()
    call_command("plan_study", *args, stdout=out)
    return out.getvalue()


def test_json_shape_and_numbers(pilot):
    data = json.loads(_plan("pilot", "--items", "600", "--k", "3", "--json", "--target-width", "0.02"))
    assert set(data) >= {"dimensions", "judges"} and data["items"] == 600 and data["k"] == 3
    for dim in DIMS:
        assert set(data["dimensions"][dim]) == STATS
        for stat in STATS:
            entry = data["dimensions"][dim][stat]
            assert set(entry) == {"predicted_ci95_width", "items_for_target"}
            assert entry["predicted_ci95_width"] > 0 and entry["items_for_target"] > 600  # 0.02 is narrower
    assert set(data["dimensions"]["overall"]) == {"hcs_mean"}
    judge = data["judges"]["j"]
    assert judge["alt_test"]["epsilon"] == 0.2 and judge["alt_test"]["items_needed"] is not None
    assert judge["alt_test"]["labels_needed"] == judge["alt_test"]["items_needed"] * 3
    assert set(judge["ppi"]["labels_needed"]) == {*DIMS, "overall"}
    # The command's numbers are hcs.planning's on the batch's ratings.
    arrays = batch_report(batch=pilot, n_resamples=0, with_sections=False).arrays
    j = list(DIMS).index("coherence")
    matrix = arrays.annotation_scores[:, j].reshape(60, 3)
    direct = plan_agreement(matrix, [1, 2, 3, 4, 5], n_items=600, k=3, target_width=0.02, seed=j)
    assert (
        data["dimensions"]["coherence"]["gwet_ac2"]["predicted_ci95_width"]
        == direct["gwet_ac2"].predicted_ci95_width
    )


def test_predicted_width_at_the_pilot_size_is_near_the_reports(pilot):
    arrays = batch_report(batch=pilot, n_resamples=0, with_sections=False).arrays
    plan = study_plan(batch=pilot, arrays=arrays, items=60, k=3)
    report = batch_report(batch=pilot, n_resamples=1000, with_sections=False)
    for row in report.dimensions:
        lo, hi = row.agreement.alpha_interval_ci95
        predicted = plan.dimensions[row.key]["krippendorff_alpha_interval"].predicted_ci95_width
        assert predicted == pytest.approx(hi - lo, rel=0.35), row.key


def test_text_output_and_bad_input(pilot):
    text = _plan("pilot", "--items", "200", "--target-width", "0.1")
    assert "Plan for 200 items x 3 annotators" in text and "items for width 0.1" in text and "judge j" in text
    for args, message in [
        (("--items", "many"), "whole numbers"),
        (("--items", "1"), "between 2"),
        (("--items", "100", "--k", "1"), "k \\(annotators"),
        (("--items", "100", "--target-width", "-1"), "positive"),
        (("--items", "100", "--target-width", "wide"), "number such as"),
    ]:
        with pytest.raises(CommandError, match=message):
            _plan("pilot", *args)
    with pytest.raises(CommandError, match="No batch named"):
        _plan("nope", "--items", "10")
    make_batch("empty", n_items=3)
    with pytest.raises(CommandError, match="a pilot needs at least 10"):
        _plan("empty", "--items", "10")


def test_plan_panel_on_the_report(client, researcher_user, pilot):
    assert client.login(username=researcher_user.username, password=PASSWORD)
    report = client.get(reverse("report_batch", args=[pilot.pk])).content.decode()
    url = reverse("report_plan", args=[pilot.pk])
    assert "Plan a study" in report and f'hx-get="{url}"' in report
    assert client.get(url).status_code == 200  # the form alone
    page = client.get(url, {"items": "300", "k": "3", "target_width": "0.05"}).content.decode()
    assert (
        "Predicted CI width" in page
        and "krippendorff_alpha_interval" in page
        and "Human labels for a PPI++" in page
    )
    fragment = client.get(url, {"items": "300", "k": "3"}, HTTP_HX_REQUEST="true")
    body = fragment.content.decode()
    assert (
        fragment.status_code == 200
        and body.lstrip().startswith('<div id="plan-result"')
        and "<html" not in body
    )
    bad = client.get(url, {"items": "300", "k": "<b>1</b>"}, HTTP_HX_REQUEST="true")
    assert (
        bad.status_code == 400
        and "whole numbers" in bad.content.decode()
        and "<b>1</b>" not in bad.content.decode()
    )


def test_a_target_no_size_reaches_reads_the_same_on_the_command_line_and_the_web(
    client, researcher_user, pilot
):
    unreached = "no size reaches it (not even all 100 items labelled)"
    text = _plan("pilot", "--items", "100", "--target-width", "0.0001")
    assert f"coherence {unreached}" in text
    assert client.login(username=researcher_user.username, password=PASSWORD)
    page = client.get(
        reverse("report_plan", args=[pilot.pk]), {"items": "100", "k": "3", "target_width": "0.0001"}
    ).content.decode()
    assert f"coherence: {unreached}" in page
    # the alt-test's unreached target: one text, which both the command and the panel print
    plan = JudgePlan(ppi_labels={}, alt_test_items=None, k=3, epsilon=0.2, target_width=None, items=100)
    assert plan.alt_test_text() == "no size reaches it (up to 1,000 items tried)"
    assert plan.ppi_label_texts() == []
