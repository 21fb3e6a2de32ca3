"""annotator.reports.selectors.batch_report: SQL aggregates → arrays → hcs, checked against published values."""

from datetime import timedelta

import numpy as np
import pytest
from django.utils import timezone

from annotator.models import Item
from annotator.reports.selectors.batch_report import batch_report, report_arrays, report_from_arrays
from annotator.reports.selectors.rows import annotation_rows
from hcs.agreement import counts_from_ratings, dimension_agreement
from hcs.agreement.examples import FLEISS_1971_DIAGNOSES, KRIPPENDORFF_2011_RELIABILITY
from tests.factories import make_annotation, make_batch, make_user

DIMS = ["coherence", "relevance", "instruction_following", "safety_compliance", "fluency"]
FIVE = [1, 2, 3, 4, 5]


def _same_on_every_dimension(value):
    return dict.fromkeys(DIMS, value)


def load_ratings(name, ratings, *, k, systems=("sys-a",)):
    """items × raters array (NaN = not rated) → a batch with those scores on every dimension."""
    batch = make_batch(name, n_items=len(ratings), k=k, systems=systems)
    users = [make_user(f"{name}-r{j}") for j in range(ratings.shape[1])]
    now = timezone.now()
    for i, item in enumerate(Item.objects.filter(batch=batch).order_by("position")):
        for j, user in enumerate(users):
            if not np.isnan(ratings[i, j]):
                make_annotation(item, user, _same_on_every_dimension(int(ratings[i, j])), submitted_at=now)
    return batch


@pytest.mark.django_db
def test_fleiss_1971_from_the_database():
    # Fleiss (1971): 30 patients × 6 raters; R irr::kappam.fleiss(diagnoses) = 0.4302445.
    batch = load_ratings("fleiss", FLEISS_1971_DIAGNOSES.astype(float), k=6)
    report = batch_report(batch=batch, n_resamples=100)
    assert report.n_items == 30 and report.n_annotations == 180
    for row in report.dimensions:
        assert row.agreement.fleiss_kappa == pytest.approx(0.4302445, abs=5e-8)
        assert row.agreement.fleiss_items_used == 30 and row.agreement.fleiss_items_left_out == 0
        assert row.agreement.fleiss_label == "moderate"


@pytest.mark.django_db
def test_krippendorff_2011_from_the_database():
    # Krippendorff (2011), 4 observers × 12 units with missing values: α ordinal 0.815, interval 0.849.
    # Unit 12 has a single value: rated, but not pairable. With k=3, units with ≥ 3 ratings enter κ.
    batch = load_ratings("kripp", KRIPPENDORFF_2011_RELIABILITY.T, k=3)
    report = batch_report(batch=batch, n_resamples=0)
    agreement = report.dimensions[0].agreement
    assert agreement.alpha_ordinal == pytest.approx(0.815, abs=5e-4)
    assert agreement.alpha_interval == pytest.approx(0.849, abs=5e-4)
    assert agreement.gwet_ac2 == pytest.approx(0.899, abs=5e-4)  # Gwet (2014), ordinal weights
    assert agreement.n_items == 12 and agreement.n_items_pairable == 11
    assert agreement.fleiss_items_used == 10 and agreement.fleiss_items_left_out == 2
    assert agreement.alpha_ordinal_ci95 is None  # bootstrap off


@pytest.mark.django_db
def test_report_equals_hcs_on_the_same_ratings():
    rng = np.random.default_rng(5)
    ratings = rng.integers(1, 6, size=(25, 4)).astype(float)
    ratings[rng.random(ratings.shape) < 0.2] = np.nan
    batch = load_ratings("same", ratings, k=3)
    report = batch_report(batch=batch, n_resamples=200, seed=9)
    counts = counts_from_ratings(ratings, FIVE)
    rated = counts[counts.sum(1) > 0]
    # First k = 3 ratings per item: imported rows share a timestamp, so file order (rater order).
    first3 = []
    for row in ratings:
        kept = row[~np.isnan(row)][:3]
        if len(kept) == 3:
            first3.append(kept)
    fleiss = counts_from_ratings(np.array(first3), FIVE)
    expected = dimension_agreement(rated, fleiss, FIVE, k=3, n_resamples=200, seed=9)
    assert report.dimensions[0].agreement == expected


@pytest.mark.django_db
def test_fleiss_takes_the_first_k_by_submission_time():
    batch = make_batch("firstk", n_items=2, k=3)
    item, other = Item.objects.filter(batch=batch).order_by("position")
    t0 = timezone.now()
    users = [make_user(f"fk{j}") for j in range(4)]
    # Submitted out of id order: user 3 first, then 0, 1, 2.
    make_annotation(item, users[3], _same_on_every_dimension(1), submitted_at=t0)
    for j, score in enumerate([5, 5, 5]):
        make_annotation(
            item, users[j], _same_on_every_dimension(score), submitted_at=t0 + timedelta(minutes=j + 1)
        )
    for j in range(3):
        make_annotation(other, users[j], _same_on_every_dimension(2 + j), submitted_at=t0)
    arrays = report_arrays(batch=batch)
    assert arrays.counts[0].tolist() == [[1, 0, 0, 0, 3], [0, 1, 1, 1, 0]]
    # The first three by time are 1, 5, 5 (not 5, 5, 5).
    assert arrays.fleiss_counts[0].tolist() == [[1, 0, 0, 0, 2], [0, 1, 1, 1, 0]]


@pytest.mark.django_db
def test_overall_systems_annotators_and_disagreements():
    batch = make_batch("sys", n_items=4, k=3, systems=("base", "tuned"))
    items = list(Item.objects.filter(batch=batch).order_by("position"))
    users = [make_user(f"s{j}") for j in range(3)]
    plan = {0: [5, 5, 4], 1: [3, 3, 3], 2: [5, 4, 5], 3: [1, 3, 5]}  # items 0, 2 base; 1, 3 tuned
    for i, scores in plan.items():
        for user, score in zip(users, scores):
            make_annotation(items[i], user, _same_on_every_dimension(score))
    report = batch_report(batch=batch, n_resamples=50)
    assert [(s.system, s.rank, s.n_items) for s in report.systems] == [("base", 1, 2), ("tuned", 2, 2)]
    assert report.systems[0].mean == pytest.approx((14 / 3 + 14 / 3) / 2)
    assert report.overall_mean == pytest.approx(np.mean([14 / 3, 3, 14 / 3, 3]))
    assert [a.annotator for a in report.annotators] == ["s0", "s1", "s2"]
    assert report.annotators[0].n_items == 4
    top = report.disagreements_for("coherence")[0]
    assert (top.item_id, top.spread, top.system_id) == (items[3].item_id, 4, "tuned")
    assert top.item_pk == items[3].pk


@pytest.mark.django_db
def test_empty_batch_gives_an_empty_report():
    batch = make_batch("empty", n_items=3)
    report = batch_report(batch=batch)
    assert report.n_annotations == 0 and report.overall_mean is None
    assert report.dimensions[0].agreement.fleiss_kappa is None
    assert report.dimensions[0].agreement.alpha_ordinal is None


@pytest.mark.django_db
def test_report_uses_a_fixed_number_of_queries(django_assert_num_queries):
    # Items, the one ordered per-annotation query, usernames (first-k counts come from numpy).
    batch = load_ratings("queries", FLEISS_1971_DIAGNOSES.astype(float), k=3)
    with django_assert_num_queries(3):
        arrays = report_arrays(batch=batch)
    with django_assert_num_queries(0):
        report_from_arrays(batch=batch, arrays=arrays, n_resamples=10, seed=1)


@pytest.mark.django_db
def test_annotation_rows_in_submission_order_with_overall():
    batch = make_batch("rows", n_items=1)
    item = Item.objects.get(batch=batch)
    t0 = timezone.now()
    make_annotation(
        item,
        make_user("late"),
        {"coherence": 5, "relevance": 4, "instruction_following": 3, "safety_compliance": 2, "fluency": 1},
        submitted_at=t0 + timedelta(seconds=5),
    )
    make_annotation(item, make_user("early"), {"coherence": 2}, flags=["unsafe_suggestion"], submitted_at=t0)
    rows = list(annotation_rows(batch=batch, with_text=True))
    assert [r["annotator"] for r in rows] == ["early", "late"]
    assert rows[0]["overall_hcs"] is None and rows[0]["flags"] == ["unsafe_suggestion"]
    assert rows[1]["overall_hcs"] == 3.7 and rows[1]["prompt"] == item.prompt


@pytest.mark.django_db
def test_scores_survive_packing_with_many_dimensions():
    # 12 dimensions on 1–5: base 6 packs 11 per column, so two packed columns per annotation.
    from annotator.models import Batch
    from hcs.rubric import Rubric

    data = Rubric.default().to_dict()
    levels = {str(v): f"level {v}" for v in range(1, 6)}
    data["dimensions"] = [
        {"key": f"d{n}", "label": f"D{n}", "weight": 1 / 12, "levels": levels} for n in range(12)
    ]
    data["rules"], data["flags"], data["exclusive_flags"], data["examples"] = [], [], [], []
    batch = Batch.objects.create(name="long-scale", rubric=data, k=3)
    Item.objects.create(batch=batch, item_id="x", prompt="p", response="r")
    item = Item.objects.get(batch=batch)
    expected = []
    for j in range(3):
        scores = {f"d{n}": 1 + (n * 3 + j * 7) % 5 for n in range(12)}
        if j == 2:
            scores["d5"] = None  # not rated
        make_annotation(item, make_user(f"long{j}"), scores)
        expected.append([np.nan if scores[f"d{n}"] is None else scores[f"d{n}"] for n in range(12)])
    arrays = report_arrays(batch=batch)
    got = arrays.annotation_scores[np.argsort(arrays.annotation_annotator)]
    np.testing.assert_array_equal(got, np.array(expected, dtype=float))
    assert arrays.counts.shape == (12, 1, 5)
