"""The study planner's accuracy on HANNA: predict the full study's interval widths from small pilots.

    .venv/bin/python bench/plan_hanna.py [--pilots 100 150 200] [--draws 10] [--seed 0]

HANNA (fixtures/hanna/): 1,056 stories, 3 raters each, six criteria on 1–5. For each criterion the
"actual" widths are the ones the report computes on all 1,056 stories (``dimension_agreement``,
1,000 percentile-bootstrap resamples), and for the overall mean (the six criteria averaged per
rating) the percentile bootstrap over stories. Each pilot is a random draw of 100–200 stories;
``hcs.planning`` predicts N = 1,056 × k = 3 from it. Printed: the mean of predicted / actual per
statistic and pilot size, and the share of pilots within ±20 %. Pure ``hcs``; not in the test suite.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hcs.agreement import dimension_agreement  # noqa: E402
from hcs.agreement.bootstrap import percentile_interval  # noqa: E402
from hcs.planning import AGREEMENT_STATISTICS, _counts, plan_agreement, plan_mean  # noqa: E402

HANNA = Path(__file__).resolve().parents[1] / "fixtures" / "hanna" / "hanna_human_long.csv"
CATEGORIES = [1, 2, 3, 4, 5]


def load() -> dict[str, np.ndarray]:
    long = pd.read_csv(HANNA)
    out = {}
    for criterion, rows in long.groupby("criterion"):
        out[criterion] = (
            rows.pivot_table(index="story_id", columns="rater", values="score").sort_index().to_numpy(float)
        )
    return out


def actual_widths(data: dict[str, np.ndarray], seed: int) -> dict[str, dict[str, float]]:
    out = {}
    for criterion, ratings in data.items():
        table = _counts(ratings, CATEGORIES)
        result = dimension_agreement(table, table, CATEGORIES, k=3, n_resamples=1000, seed=seed)
        out[criterion] = {
            key: getattr(result, attr)[1] - getattr(result, attr)[0]
            for key, attr in AGREEMENT_STATISTICS.items()
        }
    overall = np.mean(np.stack(list(data.values())), axis=0)  # stories × raters, mean over criteria
    means = overall.mean(axis=1)
    idx = np.random.default_rng(seed).integers(0, len(means), size=(1000, len(means)))
    lo, hi = percentile_interval(means[idx].mean(axis=1))
    out["overall mean"] = {"mean": hi - lo}
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pilots", type=int, nargs="+", default=[100, 150, 200])
    parser.add_argument("--draws", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    data = load()
    n_full = len(next(iter(data.values())))
    actual = actual_widths(data, args.seed)
    rng = np.random.default_rng(args.seed)
    ratios: dict[tuple[str, str, int], list[float]] = {}
    for size in args.pilots:
        for draw in range(args.draws):
            pick = rng.choice(n_full, size=size, replace=False)
            for criterion, ratings in data.items():
                plan = plan_agreement(ratings[pick], CATEGORIES, n_items=n_full, k=3, seed=draw)
                for key, p in plan.items():
                    ratios.setdefault((criterion, key, size), []).append(
                        p.predicted_ci95_width / actual[criterion][key]
                    )
            overall = np.mean(np.stack([r[pick] for r in data.values()]), axis=0)
            p = plan_mean(overall, n_items=n_full, k=3, seed=draw)
            ratios.setdefault(("overall mean", "mean", size), []).append(
                p.predicted_ci95_width / actual["overall mean"]["mean"]
            )
    print(
        f"HANNA: {n_full} stories × 3 raters; {args.draws} pilots per size; predicted / actual 95% CI width"
    )
    print(
        f"{'criterion':<13} {'statistic':<28} {'actual':>7} "
        + " ".join(f"{'n=' + str(s):>16}" for s in args.pilots)
    )
    within_all = []
    for criterion in [*data, "overall mean"]:
        for key in actual[criterion]:
            cells = []
            for size in args.pilots:
                r = np.array(ratios[(criterion, key, size)])
                within = np.mean(np.abs(r - 1) <= 0.2)
                within_all.extend(np.abs(r - 1) <= 0.2)
                cells.append(f"{r.mean():>6.3f} ({within:>4.0%} ok)")
            print(
                f"{criterion:<13} {key:<28} {actual[criterion][key]:>7.4f} "
                + " ".join(f"{c:>16}" for c in cells)
            )
    print(f"\nwithin ±20% of the full-data width: {np.mean(within_all):.1%} of {len(within_all)} predictions")


if __name__ == "__main__":
    main()
