"""Judge calibration on HANNA: every LLM judge in the file × six criteria against three human rating slots.

    .venv/bin/python bench/judges_hanna.py [--prompt 1] [--boot 1000] [--epsilon 0.2]

For each judge × criterion: Spearman ρ with the human mean (and its bootstrap CI), the human ceiling
(each rater slot against the mean of the other two), quadratic-weighted κ, the alt-test's ω and ρ_adv,
and the seconds ``hcs.calibration.calibrate_judge`` took. Pure ``hcs``; not part of the test suite.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hcs.calibration import calibrate_judge

HANNA = Path(__file__).resolve().parents[1] / "fixtures" / "hanna"
CRITERIA = {
    "Relevance": "RE",
    "Coherence": "CH",
    "Empathy": "EM",
    "Surprise": "SU",
    "Engagement": "EG",
    "Complexity": "CX",
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default=str(HANNA))
    parser.add_argument("--prompt", type=int, default=1, choices=[1, 2, 3, 4], help="HANNA evaluation prompt")
    parser.add_argument("--boot", type=int, default=1000)
    parser.add_argument("--epsilon", type=float, default=0.2)
    args = parser.parse_args()
    long = pd.read_csv(Path(args.data) / "hanna_human_long.csv")
    wide = pd.read_csv(Path(args.data) / "hanna_llm_scores_wide.csv")
    judges = sorted({c.rsplit(" ", 2)[0] for c in wide.columns if c.endswith(f" RE {args.prompt}")})
    header = f"{'judge':<13} {'criterion':<11} {'n':>5} {'rho':>6} {'95% CI':>15} {'ceiling':>7} {'qwk':>6} {'omega':>5} {'rho_adv':>7} {'alt-test':>8} {'s':>5}"
    print(header)
    print("-" * len(header))
    total = 0.0
    for criterion, code in CRITERIA.items():
        rows = long[long.criterion == criterion]
        human: dict[int, dict[str, int]] = {}
        for story, rater, score in rows[["story_id", "rater", "score"]].itertuples(index=False):
            human.setdefault(int(story), {})[rater] = int(score)
        for judge in judges:
            column = f"{judge} {code} {args.prompt}"
            values = {int(s): float(v) for s, v in zip(wide.story_id, wide[column]) if pd.notna(v)}
            values = {s: min(5.0, max(1.0, v)) for s, v in values.items()}
            start = time.perf_counter()
            c = calibrate_judge(human, values, epsilon=args.epsilon, n_boot=args.boot)
            seconds = time.perf_counter() - start
            total += seconds
            alt = c.alt_test
            ci = f"[{c.spearman_ci95[0]:.3f},{c.spearman_ci95[1]:.3f}]"
            print(
                f"{judge:<13} {criterion:<11} {c.n:>5} {c.spearman:>6.3f} {ci:>15} {c.human_ceiling_spearman:>7.3f} "
                f"{c.qwk:>6.3f} {alt.winning_rate:>5.2f} {alt.advantage_probability:>7.3f} "
                f"{'pass' if alt.passed else 'fail':>8} {seconds:>5.2f}"
            )
    print(
        f"\n{len(CRITERIA) * len(judges)} calibrations in {total:.1f} s ({args.boot} bootstrap resamples each, ε = {args.epsilon})."
    )


if __name__ == "__main__":
    main()
