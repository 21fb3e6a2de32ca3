"""What routing does to the interval on HANNA: the review draw's forecast and the widening it really gives.

    .venv/bin/python bench/routing_hanna.py [--budget 100] [--prompt 1]

The draw's design as the app makes it (``annotator.judges.services.review``): each story's uncertainty is
the four LLM judges' disagreement (the SD of their scores), the largest over the six criteria
(``hcs.routing.item_uncertainty``, ``most_uncertain``), and π = ``sampling_probabilities(…, mix=0.5)``.
Printed: the forecast the command states before drawing (``width_against_uniform`` if the uncertainty
tracks the error, and if it does not), and for each judge × criterion the ratio of widths against a random
draw of the same size with that judge's real residuals (human mean − λ·judge, λ by least squares), which
nobody knows before labelling. Pure ``hcs``; not part of the test suite
(tests/annotator/judges/test_review_forecast_hanna.py checks the figure the command quotes).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# The HANNA files and their criteria, as the judges bench reads them.
from bench.judges_hanna import CRITERIA, HANNA  # noqa: E402
from hcs.routing import (  # noqa: E402
    item_uncertainty,
    most_uncertain,
    sampling_probabilities,
    width_against_uniform,
)

JUDGES = ("Beluga-13B", "ChatGPT", "Llama-13B", "Mistral-7B")
MIX = 0.5  # annotator.judges.services.review.MIX


def hanna_widening(budget: int = 100, prompt: int = 1) -> tuple[np.ndarray, dict[tuple[str, str], float]]:
    """π as the app would draw it on HANNA, and per (criterion, judge) the realised ratio of widths."""
    human = pd.read_csv(HANNA / "hanna_human_long.csv")
    judges = pd.read_csv(HANNA / "hanna_llm_scores_wide.csv").set_index("story_id")
    means, scores, by_criterion = {}, {}, {}
    for name, code in CRITERIA.items():
        mean = human[human.criterion == name].groupby("story_id").score.mean()
        means[name] = mean.to_numpy()
        scores[name] = (
            judges.loc[mean.index, [f"{j} {code} {prompt}" for j in JUDGES]].astype(float).to_numpy()
        )
        by_criterion[name] = item_uncertainty(n_items=len(mean), judge_scores=scores[name])
    pi = sampling_probabilities(most_uncertain(by_criterion).value, budget, mix=MIX)
    realised = {}
    for name in CRITERIA:
        y = means[name]
        for j, judge in enumerate(JUDGES):
            f = scores[name][:, j]
            lam = np.cov(y, f)[0, 1] / np.var(f, ddof=1)
            residual = y - lam * f
            realised[name, judge] = width_against_uniform(pi, (residual - residual.mean()) ** 2)
    return pi, realised


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--budget", type=int, default=100)
    parser.add_argument("--prompt", type=int, default=1, choices=[1, 2, 3, 4])
    args = parser.parse_args()
    pi, realised = hanna_widening(args.budget, args.prompt)
    print(
        f"HANNA, {len(pi)} stories, budget {args.budget}, prompt {args.prompt}, mix {MIX}: smallest π {pi.min():.4f}"
    )
    print(
        f"forecast: ×{width_against_uniform(pi, None):.3f} if the uncertainty does not track the error; "
        "realised with each judge's residuals:"
    )
    for (name, judge), ratio in realised.items():
        print(f"  {name:11s} {judge:11s} ×{ratio:.3f}")
    values = np.array(list(realised.values()))
    print(f"realised: ×{values.min():.3f} to ×{values.max():.3f}")


if __name__ == "__main__":
    main()
