"""Every judge figure an export gives can be recomputed from the exported rows with pandas and scipy:
Spearman's ρ, Kendall's τ, MAE, bias and the quadratic-weighted κ of a judge from judge_scores.csv and
scores.csv; a pairwise judge's agreement, its Wilson interval and Cohen's κ from pairwise_verdicts.csv
and items.csv; and the position probe from pairwise_verdicts.csv alone. Nothing here reads the database."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest
from django.core.management import call_command
from scipy import stats

from tests.annotator.judges.test_json_full_precision import mixed_verdict, noisy_score
from tests.annotator.judges.test_judges_selector import _study
from tests.fake_judge import FakeJudge
from tests.judge_runs import run_judge


@pytest.fixture
def exported(db, tmp_path):
    _study(n_items=40, systems=("base", "new"))
    with FakeJudge(noisy_score) as fake:
        run_judge(fake, "judged", "--judge", "pointwise", model="m")
    with FakeJudge(mixed_verdict) as fake:
        pairs = (
            "--pairwise",
            "--baseline-system",
            "base",
            "--enhanced-system",
            "new",
            "--swap",
            "--limit",
            "14",
        )  # 14 pairs in both orders, 6 never judged
        run_judge(fake, "judged", "--judge", "pairwise", *pairs, template="geval_pairwise", model="m")

    def export(*args) -> str:
        out = tmp_path / "export"
        call_command("export_report", "judged", *args, "--resamples", "50", "--out", str(out))
        return out.read_text(encoding="utf-8")

    tables = {
        name: pd.read_csv(io.StringIO(export("--table", name)))
        for name in ("scores", "items", "judges", "judge_scores", "pairwise_verdicts")
    }
    return tables, json.loads(export("--format", "json"))


def round_half_up(x):
    return np.floor(np.asarray(x, dtype=float) + 0.5)


def qwk(a, b, levels):
    """Cohen's (1968) quadratic-weighted κ from the crosstab."""
    table = pd.crosstab(pd.Categorical(a, levels), pd.Categorical(b, levels), dropna=False).to_numpy(float)
    n = table.sum()
    expected = np.outer(table.sum(1), table.sum(0)) / n
    i, j = np.indices(table.shape)
    w = (i - j) ** 2 / (len(levels) - 1) ** 2
    return 1 - (w * table).sum() / (w * expected).sum()


def cohen_kappa(a, b, levels):
    table = pd.crosstab(pd.Categorical(a, levels), pd.Categorical(b, levels), dropna=False).to_numpy(float)
    n = table.sum()
    p_o = np.trace(table) / n
    p_e = (table.sum(0) * table.sum(1)).sum() / n**2
    return (p_o - p_e) / (1 - p_e)


def test_a_judges_rho_tau_and_kappa_from_the_exported_rows(exported):
    tables, report = exported
    scores, judge_scores, judges = tables["scores"], tables["judge_scores"], tables["judges"]
    per_annotation = scores.drop_duplicates(["item_id", "annotator"])
    human = per_annotation.groupby("item_id")["overall_hcs"].agg(["mean", "median"])
    kept = judge_scores[
        (judge_scores["judge"] == "pointwise")
        & (judge_scores["sample"] == 0)
        & (judge_scores["dimension"] == "overall")
    ]
    both = kept.set_index("item_id").join(human, how="inner")
    row = judges[(judges["judge"] == "pointwise") & (judges["dimension"] == "overall")].iloc[0]
    assert row["n"] == len(both) == 40
    rho = stats.spearmanr(both["value"], both["mean"]).statistic
    tau = stats.kendalltau(both["value"], both["mean"]).statistic  # τ-b
    assert row["spearman"] == pytest.approx(rho, abs=1e-12)
    assert row["kendall"] == pytest.approx(tau, abs=1e-12)
    assert row["pearson"] == pytest.approx(stats.pearsonr(both["value"], both["mean"]).statistic, abs=1e-12)
    assert row["mae"] == pytest.approx((both["value"] - both["mean"]).abs().mean(), abs=1e-12)
    assert row["bias"] == pytest.approx((both["value"] - both["mean"]).mean(), abs=1e-12)
    judge_cat = np.clip(round_half_up(both["value"]), 1, 5)
    human_cat = np.clip(round_half_up(both["median"]), 1, 5)
    assert row["qwk"] == pytest.approx(qwk(human_cat, judge_cat, [1, 2, 3, 4, 5]), abs=1e-12)
    # the JSON says the same, unrounded
    assert report["judges"]["pointwise"]["overall"]["spearman"] == pytest.approx(rho, abs=1e-12)
    # the raw score on the judge's 0-1 scale maps linearly onto 1-5
    assert np.allclose(kept["value"], 1 + 4 * kept["raw_value"])


def test_a_pairwise_judges_agreement_and_kappa_from_the_exported_rows(exported):
    tables, report = exported
    verdicts, items = tables["pairwise_verdicts"], tables["items"]
    entry = report["judge_pairwise"]["pairwise"]
    mean = items.set_index("item_id")["overall_hcs_mean"]

    def pair_outcome(group):  # each pair once: both orders must agree, else a tie
        winners = set(group["winner"])
        return winners.pop() if len(winners) == 1 else "tie"

    pairs = verdicts[verdicts["judge"] == "pairwise"].groupby(["baseline_item_id", "enhanced_item_id"])
    judged = pairs.apply(pair_outcome, include_groups=False).rename("judge").reset_index()
    difference = judged["enhanced_item_id"].map(mean) - judged["baseline_item_id"].map(mean)
    judged["human"] = np.where(
        difference.abs() < entry["tie_margin"], "tie", np.where(difference > 0, "enhanced", "baseline")
    )
    assert entry["n"] == entry["n_pairs"] == len(judged) == 14 and entry["n_verdicts"] == 28
    hits = int((judged["judge"] == judged["human"]).sum())
    assert entry["agreement"] == pytest.approx(hits / len(judged), abs=1e-12)
    wilson = stats.binomtest(hits, len(judged)).proportion_ci(method="wilson")
    assert entry["agreement_ci95"] == pytest.approx([wilson.low, wilson.high], abs=1e-12)
    kappa = cohen_kappa(judged["human"], judged["judge"], ["baseline", "enhanced", "tie"])
    assert entry["kappa"] == pytest.approx(kappa, abs=1e-12)
    consistent = pairs["winner"].nunique().eq(1)
    assert entry["order_consistency"]["consistency"] == pytest.approx(consistent.mean(), abs=1e-12)


def test_the_position_probe_from_the_exported_rows(exported):
    tables, report = exported
    verdicts = tables["pairwise_verdicts"]
    position = report["judges"]["pairwise"]["overall"]["position"]
    mine = verdicts[verdicts["judge"] == "pairwise"]
    orders = mine.groupby(["baseline_item_id", "enhanced_item_id"])
    consistent = orders["winner"].nunique().eq(1)
    decisive = mine[mine["winner_shown"] != "tie"]
    assert position["n_pairs"] == len(consistent) == 14
    assert position["consistency"] == pytest.approx(consistent.mean(), abs=1e-12)
    wilson = stats.binomtest(int(consistent.sum()), len(consistent)).proportion_ci(method="wilson")
    assert position["consistency_ci95"] == pytest.approx([wilson.low, wilson.high], abs=1e-12)
    assert position["n_decisive"] == len(decisive)
    assert position["first_preference"] == pytest.approx(
        (decisive["winner_shown"] == "first").mean(), abs=1e-12
    )
    counts = consistent.groupby(orders["winner"].first()[consistent].reindex(consistent.index)).size()
    assert position["consistent_verdicts"]["inconsistent"] == int((~consistent).sum())
    assert sum(position["consistent_verdicts"][k] for k in ("baseline", "enhanced", "tie")) == int(
        counts.sum()
    )
