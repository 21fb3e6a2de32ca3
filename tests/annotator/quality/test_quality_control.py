"""Quality control end to end on constructed data where the answer is known: five careful
annotators, one random clicker and one straight-liner, with gold checks mixed into the queue."""

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from annotator.models import Annotation, AnnotatorStanding, GoldItem, Item, QualityRule
from annotator.quality.services.gold import gold_answer_submit
from annotator.rating.services.annotations import annotation_submit
from annotator.rating.services.flow import ENDED_BLOCKED, rating_next
from annotator.reports.exports.json_export import report_to_dict
from annotator.reports.selectors.batch_report import batch_report
from tests.factories import make_batch, make_user

pytestmark = pytest.mark.django_db

DIMS = ("coherence", "relevance", "instruction_following", "safety_compliance", "fluency")
# Coherence of the careful annotators c0..c4 on items 0..3 (the table Fleiss' κ is worked from).
CAREFUL_COHERENCE = [
    [5, 5, 5, 5, 4],
    [1, 1, 1, 2, 1],
    [3, 3, 3, 3, 3],
    [4, 4, 5, 4, 4],
]
# Fleiss' κ of that table by hand (n = 5 raters, N = 4 items, categories 1..5):
#   P_i = (Σ n_ij² − n) / (n(n − 1)): item 0: (16 + 1 − 5) / 20 = 0.6; item 1: 0.6; item 2: (25 − 5) / 20 = 1;
#   item 3: 0.6.  P̄ = 2.8 / 4 = 0.7.
#   p_j over 20 ratings: 1 → 4, 2 → 1, 3 → 5, 4 → 5, 5 → 5: (0.2, 0.05, 0.25, 0.25, 0.25);
#   P_e = 0.04 + 0.0025 + 3 · 0.0625 = 0.23.  κ = (0.7 − 0.23) / (1 − 0.23) = 0.47 / 0.77.
HAND_KAPPA = 0.47 / 0.77


def careful_vector(item_row: int, who: int) -> dict[str, int]:
    c = CAREFUL_COHERENCE[item_row][who]
    # Other dimensions follow coherence but differ from it, so a careful annotator never straight-lines.
    return dict(zip(DIMS, [c, max(1, c - 1), min(5, c + 1), c, max(1, c - 1)]))


@pytest.fixture
def study():
    batch = make_batch("qc study", n_items=4, k=5, constraints=())
    QualityRule.objects.create(batch=batch, check_every=2, training_items=0)
    golds = [
        ("c-1", dict.fromkeys(DIMS, 5), 1),
        ("c-2", dict.fromkeys(DIMS, 1), 1),
        # an instructed-response item: "this is a check: give every dimension 2"
        ("c-3", dict.fromkeys(DIMS, 2), 0),
        ("c-4", dict(zip(DIMS, [5, 4, 5, 5, 4])), 1),
    ]
    for n, (item_id, scores, tolerance) in enumerate(golds):
        GoldItem.objects.create(
            batch=batch,
            item_id=item_id,
            kind="check",
            position=n,
            prompt="Plan a route.",
            response="This is a check: give every dimension 2." if item_id == "c-3" else "Go north.",
            scores=scores,
            flags=[],
            tolerance=tolerance,
        )
    careful = [make_user(f"careful{i}") for i in range(5)]
    return batch, careful, make_user("clicker"), make_user("liner")


def run(batch, annotator, answer, rounds: int = 50) -> int:
    """Let one annotator work until the queue ends; ``answer(item_row_or_gold, kind)`` gives scores."""
    rows = {pk: n for n, pk in enumerate(batch.items.order_by("position").values_list("pk", flat=True))}
    for done in range(rounds):
        step = rating_next(batch=batch, annotator=annotator)
        if step.answer is not None:
            gold_answer_submit(
                answer=step.answer, annotator=annotator, scores=answer(step.answer.gold_item, "gold")
            )
        elif step.assignment is not None:
            annotation_submit(
                item=step.assignment.item,
                annotator=annotator,
                scores=answer(rows[step.assignment.item_id], "item"),
            )
        else:
            return done
    raise AssertionError("the queue never ended")


def test_bad_annotators_are_flagged_blocked_and_excluded_and_kappa_moves_to_the_hand_value(study):
    batch, careful, clicker, liner = study
    rng = np.random.default_rng(7)
    run(batch, clicker, lambda target, kind: dict(zip(DIMS, rng.integers(1, 6, size=5).tolist())))
    run(batch, liner, lambda target, kind: dict.fromkeys(DIMS, 3))
    for who, person in enumerate(careful):
        run(
            batch,
            person,
            lambda target, kind, who=who: target.scores if kind == "gold" else careful_vector(target, who),
        )

    # Blocked by the check rule: excluded, nothing more to rate, a neutral end.
    for bad in (clicker, liner):
        standing = AnnotatorStanding.objects.get(batch=batch, annotator=bad)
        assert (
            standing.excluded and standing.blocked_at is not None and standing.exclusion_rule == "block rule"
        )
        assert rating_next(batch=batch, annotator=bad).ended == ENDED_BLOCKED
        assert Annotation.objects.filter(item__batch=batch, annotator=bad).count() == 3  # kept, not deleted
    assert not AnnotatorStanding.objects.filter(batch=batch, annotator__in=careful, excluded=True).exists()
    # Every item reached k = 5 valid annotations (the careful five); the counters count valid ones only.
    assert list(Item.objects.filter(batch=batch).values_list("n_annotations", flat=True)) == [5, 5, 5, 5]
    assert Annotation.objects.filter(item__batch=batch).count() == 4 * 5 + 2 * 3

    report = batch_report(batch=batch, n_resamples=50)
    kappa = {row.key: row.agreement.fleiss_kappa for row in report.dimensions}
    assert kappa["coherence"] == pytest.approx(HAND_KAPPA, abs=1e-12)  # 0.6103896…

    # With everyone: Fleiss takes the first k = 5 ratings per item by submission time, which on
    # items 0–2 are the two bad annotators' and three careful ones' (statsmodels as reference).
    rows = pd.DataFrame(
        Annotation.objects.filter(item__batch=batch)
        .order_by("submitted_at", "id")
        .values_list("item__position", "scores__dimension", "scores__value"),
        columns=["item", "dimension", "score"],
    )
    coh = rows[rows.dimension == "coherence"].groupby("item").head(5)
    wide = np.array([g.score.to_numpy() for _, g in coh.groupby("item")])
    table, _ = aggregate_raters(wide, n_cat=None)
    everyone = {row.key: row.agreement.fleiss_kappa for row in report.quality.dimensions_all}
    assert everyone["coherence"] == pytest.approx(sm_fleiss_kappa(table), abs=1e-12)
    assert everyone["coherence"] < kappa["coherence"]

    signals = report.quality.annotators
    assert signals["liner"].straightlining == 1.0 and signals["liner"].longest_run == 3
    assert {s.name for s in signals["liner"].signals if s.flagged} >= {"straight-lining", "gold accuracy"}
    assert signals["clicker"].gold_accuracy == 0.0 and signals["clicker"].checks_failed == 3
    assert any(s.flagged for s in signals["clicker"].signals)
    for person in careful:
        s = signals[person.username]
        assert s.gold_accuracy == 1.0 and not s.excluded and s.straightlining == 0.0
        assert s.checks_passed == s.gold_answered >= 3

    data = report_to_dict(report)
    assert {e["annotator"]: e["rule"] for e in data["exclusions"]} == {
        "clicker": "block rule",
        "liner": "block rule",
    }
    assert data["dimensions"]["coherence"]["fleiss_kappa"] == pytest.approx(HAND_KAPPA)
    assert data["dimensions_all_annotators"]["coherence"]["fleiss_kappa"] == pytest.approx(
        everyone["coherence"]
    )
    entry = {a["annotator"]: a for a in data["annotators"]}
    assert (
        entry["liner"]["excluded"] is True
        and "under the block threshold" in entry["liner"]["exclusion_reason"]
    )
    assert entry["careful0"]["excluded"] is False and entry["careful0"]["gold_accuracy"] == 1.0
    for key in (
        "gold_accuracy",
        "checks_passed",
        "checks_failed",
        "excluded",
        "exclusion_reason",
        "median_seconds",
        "straightlining",
    ):
        assert all(key in a for a in data["annotators"])
    # The system ranking and HCS use the careful five only: 20 annotations.
    assert report.n_annotations == 20


def test_agreement_over_time_in_the_json_and_on_the_page(study, client):
    batch, careful, _, _ = study
    QualityRule.objects.filter(batch=batch).update(window=10, check_every=0)
    for who, person in enumerate(careful):
        run(batch, person, lambda target, kind, who=who: careful_vector(target, who))
    report = batch_report(batch=batch, n_resamples=20)
    data = report_to_dict(report)["agreement_over_time"]
    every = data["every_n"]
    assert every["size"] == 10 and [w["window"] for w in every["windows"]] == ["1\u201310", "11\u201320"]
    assert sum(w["n_annotations"] for w in every["windows"]) == 20
    # Each item is finished in the window of its last rating; all four items end in the second one
    # (careful4 rates last), so the second window's κ is the whole table's, 0.47 / 0.77.
    assert [w["n_items"] for w in every["windows"]] == [0, 4]
    assert every["windows"][1]["dimensions"]["coherence"]["fleiss_kappa"] == pytest.approx(HAND_KAPPA)
    assert every["windows"][0]["dimensions"]["coherence"]["fleiss_kappa"] is None
    assert set(every["annotator_drift"]) == {p.username for p in careful}
    assert len(data["per_day"]["windows"]) == 1
    client.force_login(make_user("res", role="researcher"))
    page = client.get(f"/reports/{batch.pk}/").content.decode()
    assert "Agreement over time" in page and 'id="annotator-drift"' in page and "<svg" in page
