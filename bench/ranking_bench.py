"""The statistics of comparing systems (hcs.ranking), against their targets, printed as tables.

    .venv/bin/python bench/ranking_bench.py [--quick] [--seed 0]

1. Fit: Bradley–Terry (ties as half a win) and Davidson scores against a direct scipy maximum-likelihood fit, and
   against evalica and choix when a Python that has them is found (tests/hcs/ranking/oracle.py). Target ≤ 1e-6.
2. Recovery: a planted ranking of 10 systems from 2,000 battles, Kendall τ over 100 simulations. Target median ≥ 0.9.
3. Speed: 100,000 battles, 1,000 bootstrap resamples over prompts, 10 systems (and 50). Target ≤ 15 s. Median of 3 runs,
   with the machine's load average printed beside it (the figure is only comparable at a similar load).
4. Bootstrap coverage: the percentile intervals' coverage of the scores' target when battles on a prompt are alike,
   resampling prompts against resampling rows.
5. Prediction-powered rank-sets: coverage of the true ranking in 500 simulations (target ≥ 1 − α) and their mean
   size against people's alone with 200 human and 5,000 judge battles (target ≤ 0.8×).
6. Paired differences: coverage of the paired t interval (target 93–97 %) and its width against Welch's unpaired
   one as prompts vary more; the PPI++ difference against people alone.

Pure ``hcs`` (the simulations are hcs/ranking/simulate.py); not part of the test suite (tests/hcs/ranking/ holds the
short versions).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scipy.stats import kendalltau  # noqa: E402

from hcs.ranking.battles import Battles, prompt_counts  # noqa: E402
from hcs.ranking.bt import TIES, fit_counts  # noqa: E402
from hcs.ranking.leaderboard import leaderboard  # noqa: E402
from hcs.ranking.paired import paired_difference, ppi_paired_difference  # noqa: E402
from hcs.ranking.ppr import prediction_powered_ranking  # noqa: E402
from hcs.ranking.simulate import judged_battles, likert_scores, planted_battles, true_win_rates  # noqa: E402
from tests.hcs.ranking.oracle import SCRIPT, oracle_python  # noqa: E402
from tests.hcs.ranking.test_bt import direct_fit  # noqa: E402

PLANTED = np.linspace(-1.0, 1.0, 10)


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg()) + f" on {os.cpu_count()} cores"


def fit_table(seed: int) -> None:
    bt = planted_battles(
        np.random.default_rng(seed), np.linspace(-1.2, 1.2, 7), 900, n_prompts=300, tie_rate=0.15
    )
    pc = prompt_counts(bt)
    print("\n1. Fit against a direct maximum-likelihood fit (7 systems, 900 battles, 15 % ties)")
    print(f"{'reference':<28}{'max |difference|':>18}")
    for ties in ("half", "davidson"):
        ours = fit_counts(pc.totals(), pc.pairs, bt.n_systems, ties=ties).scores[0]
        print(f"{'scipy BFGS, ' + ties:<28}{np.abs(ours - direct_fit(bt, ties)[0]).max():>18.2e}")
    python = oracle_python()
    payload = json.dumps({"k": 7, "a": bt.a.tolist(), "b": bt.b.tolist(), "outcome": bt.outcome.tolist()})
    refs = json.loads(
        subprocess.run([python, "-c", SCRIPT], input=payload, capture_output=True, text=True).stdout
    )
    ours = fit_counts(pc.totals(), pc.pairs, 7).scores[0]
    for name in ("evalica", "choix"):
        print(f"{name + ', half':<28}{np.abs(ours - np.array(refs[name])).max():>18.2e}")


def recovery_table(seed: int) -> None:
    rng, taus = np.random.default_rng(seed), []
    for _ in range(100):
        pc = prompt_counts(planted_battles(rng, PLANTED, 2000))
        taus.append(kendalltau(fit_counts(pc.totals(), pc.pairs, 10).scores[0], PLANTED).statistic)
    q = np.percentile(taus, [5, 50])
    print("\n2. Planted ranking of 10 systems (scores −1…1 evenly), 2,000 battles, 100 simulations")
    print(f"{'median τ':>10}{'5th pct':>10}{'min':>8}{'share ≥ 0.9':>14}")
    print(f"{q[1]:>10.3f}{q[0]:>10.3f}{min(taus):>8.3f}{np.mean(np.array(taus) >= 0.9):>14.2f}")


def speed_table(seed: int, runs: int) -> None:
    print(f"\n3. Bootstrap speed: 100,000 battles, 1,000 resamples; load average {_load()}")
    print(f"{'systems':>8}{'prompts':>9}{'ties':>10}{'median s':>10}{'runs':>6}{'degenerate':>12}")
    rng = np.random.default_rng(seed)
    for k, n_prompts, models in ((10, 100_000, TIES), (10, 10_000, TIES), (50, 100_000, ("half",))):
        bt = planted_battles(rng, np.linspace(-1.0, 1.0, k), 100_000, n_prompts=n_prompts)
        for ties in models:
            times = []
            for _ in range(runs):
                start = time.perf_counter()
                board = leaderboard(bt, ties=ties, n_boot=1000)
                times.append(time.perf_counter() - start)
            row = f"{k:>8}{n_prompts:>9,}{ties:>10}{np.median(times):>10.2f}{runs:>6}"
            print(row + f"{board.degenerate_replicates:>12}")
    print(f"(load average after: {_load()})")


def coverage_table(seed: int, sims: int) -> None:
    print(f"\n4. 95 % interval coverage of the scores' target, 2,000 battles, {sims} simulations")
    print(f"{'prompt SD':>10}{'prompts':>9}{'by prompt':>11}{'by row':>8}{'intervals':>11}{'rank cover':>12}")
    true_rank = 1 + (PLANTED[None, :] > PLANTED[:, None]).sum(1)
    for prompt_sd, n_prompts in ((0.7, 200), (0.7, 50), (0.0, 200)):
        rng = np.random.default_rng(seed)
        big = planted_battles(rng, PLANTED, 400_000, n_prompts=n_prompts * 200, prompt_sd=prompt_sd)
        pc = prompt_counts(big)
        target = fit_counts(pc.totals(), pc.pairs, 10).scores[0]
        hits, ranks = {"prompts": [], "rows": []}, []
        for _ in range(sims):
            bt = planted_battles(rng, PLANTED, 2000, n_prompts=n_prompts, prompt_sd=prompt_sd)
            rows = Battles(np.arange(len(bt)), bt.a, bt.b, bt.outcome, bt.n_systems)
            for name, data in (("prompts", bt), ("rows", rows)):
                board = leaderboard(data, n_boot=300)
                hits[name] += [r.ci_low <= target[r.system] <= r.ci_high for r in board.rows]
                if name == "prompts":  # the marginal rank intervals against the planted order
                    ranks += [r.rank_low <= true_rank[r.system] <= r.rank_high for r in board.rows]
        p, r = np.mean(hits["prompts"]), np.mean(hits["rows"])
        print(
            f"{prompt_sd:>10}{n_prompts:>9}{p:>11.3f}{r:>8.3f}{len(hits['rows']):>11}{np.mean(ranks):>12.3f}"
        )


def ppr_table(seed: int, sims: int) -> None:
    theta = true_win_rates(PLANTED)
    truth = 1 + (theta[None, :] > theta[:, None]).sum(1)
    print(f"\n5. Rank-sets, 10 systems, 200 human + 5,000 judge battles, {sims} simulations")
    print(
        f"{'α':>5}{'judge agrees':>14}{'PP cover':>10}{'human cover':>13}{'PP size':>9}{'human size':>12}{'ratio':>7}"
    )
    for alpha, agree in ((0.05, 0.8), (0.1, 0.8), (0.05, 0.6), (0.05, 0.0)):
        rng, res = np.random.default_rng(seed), []
        for _ in range(sims):
            r = prediction_powered_ranking(*judged_battles(rng, PLANTED, 200, 5000, agree=agree), alpha=alpha)
            res.append(
                (
                    ((r.rank_low <= truth) & (truth <= r.rank_high)).all(),
                    ((r.human_rank_low <= truth) & (truth <= r.human_rank_high)).all(),
                    (r.rank_high - r.rank_low + 1).mean(),
                    (r.human_rank_high - r.human_rank_low + 1).mean(),
                )
            )
        c, h, s, hs = np.array(res, float).mean(0)
        print(f"{alpha:>5}{agree:>14}{c:>10.3f}{h:>13.3f}{s:>9.2f}{hs:>12.2f}{s / hs:>7.2f}")
    # Beside them, the leaderboard's marginal bootstrap rank intervals from the same 200 human battles.
    rng, joint, each, size = np.random.default_rng(seed), [], [], []
    for _ in range(max(1, sims // 5)):
        human = judged_battles(rng, PLANTED, 200, 0)[0]
        rows = leaderboard(human, n_boot=300).rows
        inside = np.array([r.rank_low <= truth[r.system] <= r.rank_high for r in rows])
        joint.append(inside.all())
        each.append(inside.mean())
        size.append(np.mean([r.rank_high - r.rank_low + 1 for r in rows]))
    print(
        f"Bradley–Terry bootstrap rank intervals from the 200 human battles ({len(joint)} simulations): "
        f"each covers {np.mean(each):.3f}, all at once {np.mean(joint):.3f}, mean size {np.mean(size):.2f}"
    )


def paired_table(seed: int, sims: int) -> None:
    print(f"\n6. Paired difference B − A = 0.3, 30 prompts, noise SD 0.6, {sims} simulations")
    print(f"{'prompt SD':>10}{'coverage':>10}{'paired/unpaired width':>23}{'narrower':>10}")
    for prompt_sd in (0.0, 0.4, 0.8):
        rng, hits, ratios = np.random.default_rng(seed), 0, []
        for _ in range(sims):
            a, b, _, _ = likert_scores(rng, 30, prompt_sd=prompt_sd)
            r = paired_difference(a, b)
            hits += r.ci95[0] <= 0.3 <= r.ci95[1]
            ratios.append((r.ci95[1] - r.ci95[0]) / (r.unpaired_ci95[1] - r.unpaired_ci95[0]))
        print(
            f"{prompt_sd:>10}{hits / sims:>10.3f}{np.mean(ratios):>23.3f}{np.mean(np.array(ratios) < 1):>10.3f}"
        )
    rng, hits, widths = np.random.default_rng(seed), 0, []
    for _ in range(sims // 5):
        a, b, ja, jb = likert_scores(rng, 500)
        r = ppi_paired_difference(a[:60], b[:60], ja[:60], jb[:60], ja[60:], jb[60:])
        hits += r["ci95"][0] <= 0.3 <= r["ci95"][1]
        h = paired_difference(a[:60], b[:60])
        widths.append((r["ci95"][1] - r["ci95"][0]) / (h.ci95[1] - h.ci95[0]))
    print(
        f"PPI++ (60 rated of 500 prompts, judge on all): coverage {hits / (sims // 5):.3f}, "
        f"width {np.mean(widths):.2f}× people's alone"
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer simulations and one timing run")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    fit_table(args.seed)
    recovery_table(args.seed)
    speed_table(args.seed, 1 if args.quick else 3)
    coverage_table(args.seed, 20 if args.quick else 200)
    ppr_table(args.seed, 100 if args.quick else 500)
    paired_table(args.seed, 1000 if args.quick else 5000)


if __name__ == "__main__":
    main()
