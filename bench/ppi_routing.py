"""Human labels where the judge is unsure, against labels drawn at random, at the same budget.

    .venv/bin/python bench/ppi_routing.py [--items 5000] [--budget 200] [--reps 1000] [--seed 0]

A simulated study: each item's true human mean Y ~ N(3, 1); the judge scores
Y + 0.3 + 0.4·(σ_i − mean σ) + σ_i·ε, with a noise σ_i that varies by item (and a bias that grows with
it: where the judge is unsure it is also off), and reports an uncertainty: the SD of 5 samples of its
own score (what ``run_judge --samples 5`` stores). Two judges: "spread", σ uniform on 0.1–2, and
"mostly sure", σ = 0.3 on 80 % of items and 1.8 on the rest. Three ways to spend the same expected
budget of labels:

* random: every item labelled with probability budget/N, PPI++ (``hcs.ppi``);
* active: π ∝ the reported uncertainty (50 % mixed uniform, as the app draws), weighted by 1/π (``hcs.routing.active_mean``,
  Zrnic & Candès 2024);
* top-n, unweighted: the ``budget`` most uncertain items, then PPI++ as if random. This is what labelling
  the ``select_for_review`` list and reading the report's PPI panel would give; it is biased;
* drawn, unweighted: the active design's labels read by PPI++ as if random (the panel without the
  recorded draw); biased too;
* drawn, 75 % labelled: the active design while a random quarter of the drawn items still waits for its
  label, π scaled by the share labelled (``hcs.routing.labelled_so_far``), as the report does under a
  recorded draw.

Printed per design: mean CI width, RMSE and bias of the estimate, and coverage of the 95 % CI.
Pure ``hcs``; not part of the test suite (tests/hcs/test_routing.py holds the short version).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hcs.ppi import ppi_mean  # noqa: E402
from hcs.routing import active_mean, labelled_so_far, sampling_probabilities  # noqa: E402


def run(items: int, budget: int, reps: int, seed: int, judge: str = "spread") -> dict[str, dict[str, float]]:
    rng = np.random.default_rng(seed)
    waits = np.random.default_rng([seed, 1])  # its own stream: the first three designs match earlier runs
    truth = 3.0
    out: dict[str, list[tuple[float, float, float]]] = {
        "random": [],
        "active": [],
        "top-n unweighted": [],
        "drawn unweighted": [],
        "drawn 75% labelled": [],
    }
    for _ in range(reps):
        y = rng.normal(truth, 1, size=items)
        sigma = (
            rng.uniform(0.1, 2.0, size=items)
            if judge == "spread"
            else np.where(rng.random(items) < 0.8, 0.3, 1.8)
        )
        f = y + 0.3 + 0.4 * (sigma - sigma.mean()) + sigma * rng.normal(size=items)
        reported = (sigma[:, None] * rng.normal(size=(items, 5))).std(axis=1, ddof=1)  # 5 samples' SD

        xi = rng.random(items) < budget / items
        r = ppi_mean(y[xi], f[xi], f[~xi])
        # fresh items every study: each interval is for the population's mean
        out["random"].append((r.estimate, *r.ci95_superpopulation))

        pi = sampling_probabilities(reported, budget, mix=0.5)  # the app's share (review.MIX)
        xi = rng.random(items) < pi
        a = active_mean(y, f, xi, pi)
        out["active"].append((a.estimate, *a.ci95))
        d = ppi_mean(y[xi], f[xi], f[~xi])
        out["drawn unweighted"].append((d.estimate, *d.ci95_superpopulation))
        waiting = np.flatnonzero(xi)
        waiting = waits.choice(waiting, len(waiting) // 4, replace=False)
        so_far = xi.copy()
        so_far[waiting] = False
        xi_used, pi_used = labelled_so_far(pi, xi, so_far)
        p = active_mean(y, f, xi_used, pi_used)
        out["drawn 75% labelled"].append((p.estimate, *p.ci95))

        top = np.zeros(items, dtype=bool)
        top[np.argsort(-reported)[:budget]] = True
        t = ppi_mean(y[top], f[top], f[~top])
        out["top-n unweighted"].append((t.estimate, *t.ci95_superpopulation))
    summary = {}
    for name, rows in out.items():
        est, lo, hi = np.array(rows).T
        summary[name] = {
            "ci_width": float(np.mean(hi - lo)),
            "rmse": float(np.sqrt(np.mean((est - truth) ** 2))),
            "bias": float(np.mean(est) - truth),
            "coverage": float(np.mean((lo <= truth) & (truth <= hi))),
        }
    return summary


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=5000)
    parser.add_argument("--budget", type=int, default=200)
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"N = {args.items} items, budget {args.budget} labels, {args.reps} simulated studies per judge")
    for judge in ("spread", "mostly sure"):
        summary = run(args.items, args.budget, args.reps, args.seed, judge)
        print(f"\njudge: {judge}")
        print(f"{'design':<20} {'CI width':>9} {'RMSE':>8} {'bias':>8} {'coverage':>8}")
        for name, s in summary.items():
            print(
                f"{name:<20} {s['ci_width']:>9.4f} {s['rmse']:>8.4f} {s['bias']:>+8.4f} {s['coverage']:>8.3f}"
            )
        base = summary["random"]
        print(
            f"active vs random: CI width ×{summary['active']['ci_width'] / base['ci_width']:.3f}, "
            f"RMSE ×{summary['active']['rmse'] / base['rmse']:.3f}"
        )


if __name__ == "__main__":
    main()
