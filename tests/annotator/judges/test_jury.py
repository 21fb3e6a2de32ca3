"""Juries: a virtual judge whose score is its members' mean and whose verdict is their majority, through the same
statistics as any judge, with its card saying whether it beats its best member."""

from __future__ import annotations

import json

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from scipy.stats import spearmanr

from annotator.models import Judge, JudgeScore, PairwiseVerdict
from hcs.calibration.jury import jury_verdict
from tests.annotator.judges.test_judges_selector import _add_scores, _study
from tests.factories import make_batch, make_user


def _noisy(truth, seed):
    rng = np.random.default_rng(seed)
    return {i: float(np.clip(q + rng.normal(0, 1.2), 1, 5)) for i, q in truth.items()}


@pytest.mark.django_db
def test_a_jury_scores_the_mean_and_its_card_compares_it_with_its_best_member(client, capsys):
    batch, truth, human = _study(n_items=40)
    a, b = _noisy(truth, 1), _noisy(truth, 2)
    _add_scores("A", batch, a)
    _add_scores("B", batch, b)
    call_command("run_judge", batch.name, "--jury", "A,B", "--judge", "panel")
    assert (
        "Jury “panel” of A, B on “judged”: 40 mean scores, 0 majority verdicts; 0 calls"
        in capsys.readouterr().out
    )
    jury = Judge.objects.get(name="panel")
    assert jury.params == {"jury": ["A", "B"]} and jury.model == "jury"
    got = dict(JudgeScore.objects.filter(judge=jury).values_list("item__item_id", "value"))
    assert got == pytest.approx({i: (a[i] + b[i]) / 2 for i in a})

    client.force_login(make_user("res", role="researcher"))
    card = json.loads(client.get(reverse("judge_card_export", args=[batch.pk, jury.pk, "json"])).content)
    mean_human = {i: float(np.mean(list(r.values()))) for i, r in human.items()}
    items = sorted(mean_human)

    def rho(scores):
        return spearmanr([scores[i] for i in items], [mean_human[i] for i in items]).statistic

    entry = card["jury"]["dimensions"]["coherence"]
    assert card["jury"]["members"] == ["A", "B"]
    assert entry["spearman"] == pytest.approx(rho(got), abs=1e-12)
    best = max(("A", rho(a)), ("B", rho(b)), key=lambda x: x[1])
    assert (entry["best_member"], entry["best_member_spearman"]) == (
        best[0],
        pytest.approx(best[1], abs=1e-12),
    )
    assert entry["beats_best_member"] == (rho(got) > best[1])
    # The jury goes through the same statistics as any judge: ceiling, alt-test, PPI on its card.
    coherence = card["dimensions"]["coherence"]
    assert (
        "human_ceiling_spearman" in coherence
        and coherence["alt_test"]["n_items"] == 40
        and "ppi" in coherence
    )
    page = client.get(reverse("judge_card", args=[batch.pk, jury.pk])).content.decode()
    assert "Beats its best member?" in page
    # A saved jury is reused by name on a rerun (e.g. after the members changed).
    JudgeScore.objects.filter(judge__name="A").update(value=5.0)
    call_command("run_judge", batch.name, "--jury", "panel")
    again = dict(JudgeScore.objects.filter(judge=jury).values_list("item__item_id", "value"))
    assert again == pytest.approx({i: (5.0 + b[i]) / 2 for i in b})


@pytest.mark.django_db
def test_a_jury_takes_the_majority_verdict():
    batch = make_batch("pairs", n_items=6, systems=("base", "new"))
    items = {(i.system_id, i.prompt_id): i for i in batch.items.all()}
    prompts = sorted({p for _, p in items})
    votes = {
        "J1": ["enhanced", "baseline", "tie"],
        "J2": ["enhanced", "baseline", "enhanced"],
        "J3": ["baseline", "enhanced", "baseline"],
    }
    for name, winners in votes.items():
        judge = Judge.objects.create(name=name)
        for prompt, winner in zip(prompts, winners):
            PairwiseVerdict.objects.create(
                judge=judge,
                baseline=items[("base", prompt)],
                enhanced=items[("new", prompt)],
                winner=winner,
                baseline_score=3,
                enhanced_score=4 if name != "J3" else 2,
            )
    call_command("run_judge", "pairs", "--jury", "J1,J2,J3")
    got = {v.baseline.prompt_id: v for v in PairwiseVerdict.objects.filter(judge__name="jury:J1+J2+J3")}
    assert [got[p].winner for p in prompts] == [
        "enhanced",
        "baseline",
        "tie",
    ]  # no majority on the third: a tie
    assert got[prompts[0]].enhanced_score == pytest.approx(10 / 3)


def test_jury_verdict_against_hand_counts():
    assert jury_verdict(["a", "b", "b", "a", "b"]) == "b" and jury_verdict(["tie"]) == "tie"
    with pytest.raises(ValueError):
        jury_verdict([])


@pytest.mark.django_db
def test_bad_juries_are_refused_and_save_nothing():
    batch, truth, _ = _study(n_items=5)
    _add_scores("A", batch, dict.fromkeys(truth, 3.0))
    Judge.objects.create(name="B")  # nothing scored
    for jury, match in (
        ("A", "at least two member judges"),
        ("A,ghost", "no judge named \u201cghost\u201d"),
        ("A,B", "no item \\(or pair\\) in common"),
    ):
        with pytest.raises(CommandError, match=match):
            call_command("run_judge", batch.name, "--jury", jury)
    assert not Judge.objects.filter(name__startswith="jury:").exists()
    with pytest.raises(CommandError, match="--template is required"):
        call_command("run_judge", batch.name)
