"""The judges section of the batch report: database rows → hcs.calibration, same numbers as hcs directly."""

import numpy as np
import pytest

from annotator.judges.selectors.judges import judges_report, pairwise_report
from annotator.models import Judge, JudgeScore, PairwiseVerdict
from annotator.reports.selectors.batch_report import batch_report, report_arrays
from hcs.calibration import calibrate_judge, compare_verdicts, human_preference
from tests.factories import make_annotation, make_batch, make_user

DIMS = ("coherence", "relevance", "instruction_following", "safety_compliance", "fluency")


def _study(n_items=36, systems=("sys-a",)):
    """Three annotators rate every item near a true quality; returns the batch and the truth per item."""
    batch = make_batch("judged", n_items=n_items, systems=systems)
    rng = np.random.default_rng(0)
    users = [make_user(f"u{n}") for n in range(3)]
    truth = {}
    human = {}
    for item in batch.items.order_by("position"):
        quality = int(rng.integers(1, 6))
        truth[item.item_id] = quality
        for user in users:
            value = int(np.clip(quality + rng.integers(-1, 2), 1, 5))
            make_annotation(item, user, dict.fromkeys(DIMS, value))
            human.setdefault(item.item_id, {})[user.username] = value
    return batch, truth, human


def _add_scores(judge_name, batch, values, dimension="coherence"):
    judge, _ = Judge.objects.get_or_create(name=judge_name)
    JudgeScore.objects.bulk_create(
        JudgeScore(
            judge=judge,
            item=item,
            dimension=dimension,
            raw_value=values[item.item_id],
            scale_min=1,
            scale_max=5,
            value=values[item.item_id],
        )
        for item in batch.items.all()
    )
    return judge


@pytest.mark.django_db
def test_section_matches_hcs_on_the_same_data():
    batch, _truth, human = _study()
    consensus = {i: float(np.mean(list(r.values()))) for i, r in human.items()}
    _add_scores("consensus", batch, consensus)
    section = judges_report(batch=batch, arrays=report_arrays(batch=batch), n_boot=100)
    assert [j["name"] for j in section.judges] == ["consensus"]
    (row,) = section.rows
    direct = calibrate_judge(human, consensus, n_boot=100)
    assert row.calibration.n == 36
    assert row.calibration.spearman == pytest.approx(direct.spearman)
    assert row.calibration.qwk == pytest.approx(direct.qwk)
    assert row.calibration.human_ceiling_spearman == pytest.approx(direct.human_ceiling_spearman)
    assert row.calibration.alt_test.winning_rate == direct.alt_test.winning_rate == 1.0
    data = section.to_json()["consensus"]["coherence"]
    for key in (
        "n",
        "spearman",
        "spearman_ci95",
        "kendall",
        "pearson",
        "mae",
        "bias",
        "qwk",
        "human_ceiling_spearman",
    ):
        assert key in data
    assert data["alt_test"]["passed"] is True and data["alt_test"]["epsilon"] == 0.2
    assert set(data["alt_test"]) >= {"winning_rate", "advantage_probability", "passed", "epsilon"}


@pytest.mark.django_db
def test_inverted_judge_and_epsilon_argument():
    batch, truth, _human = _study()
    _add_scores("inverted", batch, {i: 6.0 - v for i, v in truth.items()})
    section = judges_report(batch=batch, arrays=report_arrays(batch=batch), epsilon=0.1, n_boot=50)
    data = section.to_json()["inverted"]["coherence"]
    assert data["possibly_inverted"] is True
    assert data["alt_test"]["epsilon"] == 0.1
    assert data["alt_test"]["passed"] is False


@pytest.mark.django_db
def test_overall_dimension_uses_the_weighted_hcs():
    batch, truth, human = _study()
    _add_scores("overall-judge", batch, {i: float(v) for i, v in truth.items()}, dimension="overall")
    section = judges_report(batch=batch, arrays=report_arrays(batch=batch), n_boot=50)
    (row,) = section.rows
    # Every dimension carries the same value here, so overall HCS = that value.
    assert row.dimension == "overall" and row.label == "Overall HCS"
    assert row.calibration.spearman == pytest.approx(calibrate_judge(human, truth, n_boot=10).spearman)


@pytest.mark.django_db
def test_batch_report_carries_the_sections():
    batch, truth, _human = _study()
    _add_scores("consensus", batch, {i: float(v) for i, v in truth.items()})
    report = batch_report(batch=batch, n_resamples=50)
    assert "consensus" in report.sections["judges"].to_json()
    assert not report.sections["judge_pairwise"]


@pytest.mark.django_db
def test_pairwise_section_against_human_preference():
    batch, _truth, human = _study(n_items=12, systems=("base", "new"))
    judge = Judge.objects.create(name="pw")
    items = list(batch.items.order_by("position"))
    expected_j, expected_h, conf = [], [], []
    for base, new in zip(items[::2], items[1::2]):
        b = np.mean(list(human[base.item_id].values()))
        e = np.mean(list(human[new.item_id].values()))
        PairwiseVerdict.objects.create(
            judge=judge, baseline=base, enhanced=new, winner="enhanced", confidence=0.9
        )
        expected_j.append("enhanced")
        expected_h.append(human_preference(b, e))
        conf.append(0.9)
    section = pairwise_report(batch=batch, arrays=report_arrays(batch=batch))
    (row,) = section.rows
    direct = compare_verdicts(expected_j, expected_h, conf)
    assert row.comparison == direct
    assert section.to_json()["pw"]["n"] == 6


@pytest.mark.django_db
def test_pairwise_confidence_calibration_matches_hcs(client, researcher_user):
    from django.urls import reverse

    from hcs.calibration.confidence import reliability
    from tests.factories import PASSWORD

    batch, _, human = _study(n_items=12, systems=("base", "new"))
    judge = Judge.objects.create(name="pw")
    items = list(batch.items.order_by("position"))
    right, stated = [], []
    for n, (base, new) in enumerate(zip(items[::2], items[1::2])):
        preference = human_preference(
            np.mean(list(human[base.item_id].values())), np.mean(list(human[new.item_id].values()))
        )
        confidence = (0.95, 0.55, None)[n % 3]
        PairwiseVerdict.objects.create(
            judge=judge, baseline=base, enhanced=new, winner="enhanced", confidence=confidence
        )
        right.append(preference == "enhanced")
        stated.append(np.nan if confidence is None else confidence)
    row = pairwise_report(batch=batch, arrays=report_arrays(batch=batch)).rows[0]
    direct = reliability(stated, right)
    assert row.confidence.n == 4 and row.confidence.ece == pytest.approx(direct.ece)
    data = row.to_json()["confidence_calibration"]
    assert data["n"] == 4 and data["ece"] == pytest.approx(direct.ece, abs=1e-4) and len(data["bins"]) == 10
    assert client.login(username=researcher_user.username, password=PASSWORD)
    page = client.get(reverse("report_judges", args=[batch.pk])).content.decode()
    assert "pw: stated confidence" in page and "pw: reliability diagram" in page
