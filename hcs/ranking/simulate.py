"""Simulated battles and Likert scores with a planted truth, for the ranking tests and bench.

Battles. Systems have log-strengths ``scores``; pairs are drawn uniformly, each battle on its own prompt unless
``n_prompts`` is given. A verdict is a tie with probability ``tie_rate`` (a third of them ``both_bad``), else
``a`` wins with probability σ(s_a − s_b + z_pa − z_pb), z_pm a lasting effect N(0, ``prompt_sd``²) of prompt p
on system m, shared by the prompt's battles (so battles on one prompt are not independent). The side shown
on the left is a fair coin, and a person picks the left side instead of judging with probability
``left_pull`` (position bias).

Judge. For prediction-powered ranking, the judge sees each battle twice (both orders). Each time it copies
the human verdict with probability ``agree`` and otherwise draws its own verdict from a biased model
(it flattens the differences and favours the lower-indexed system), so it is informative and wrong in a
systematic way; its credit is the mean of the two.
"""

from __future__ import annotations

import numpy as np

from hcs.ranking.battles import Battles, battles

__all__ = ["judged_battles", "likert_scores", "planted_battles", "true_win_rates"]


def _pairs(rng, k, n):
    a = rng.integers(0, k, n)
    return a, (a + rng.integers(1, k, n)) % k


def _verdicts(rng, scores, a, b, tie_rate, shift=0.0):
    u = scores[a] - scores[b] + shift
    p = 1 / (1 + np.exp(-u))
    r = rng.random(len(a))
    tie = np.where(rng.random(len(a)) < 1 / 3, 3, 2)
    return np.where(r < tie_rate, tie, np.where(r < tie_rate + (1 - tie_rate) * p, 0, 1))


def planted_battles(
    rng, scores, n_battles, *, n_prompts=None, tie_rate=0.1, prompt_sd=0.0, left_pull=0.0
) -> Battles:
    """Battles among ``len(scores)`` systems with a planted Bradley–Terry truth (module docstring)."""
    scores = np.asarray(scores, float)
    a, b = _pairs(rng, len(scores), n_battles)
    prompt = np.arange(n_battles) if n_prompts is None else rng.integers(0, n_prompts, n_battles)
    shift = 0.0
    if prompt_sd:  # a lasting effect of each prompt on each system, shared by that prompt's battles
        effect = rng.normal(0, prompt_sd, (int(prompt.max()) + 1, len(scores)))
        shift = effect[prompt, a] - effect[prompt, b]
    outcome = _verdicts(rng, scores, a, b, tie_rate, shift)
    left = rng.integers(0, 2, n_battles)
    pulled = rng.random(n_battles) < left_pull
    outcome = np.where(pulled, left, outcome)
    return battles(prompt, a, b, outcome, n_systems=len(scores), left=np.where(left == 0, "a", "b"))


def true_win_rates(scores, *, tie_rate=0.1, tie_credit=0.5) -> np.ndarray:
    """θ_m: the expected credit of system m in a battle against a uniformly drawn other system."""
    s = np.asarray(scores, float)
    p = 1 / (1 + np.exp(-(s[:, None] - s[None, :])))
    credit = (1 - tie_rate) * p + tie_rate * tie_credit
    np.fill_diagonal(credit, np.nan)
    return np.nanmean(credit, 1)


def judged_battles(rng, scores, n_human, n_judge, *, agree=0.8, tie_rate=0.1, tie_credit=0.5):
    """People's battles with the judge's credit on them, and the judge's own further battles with its credit.

    Returns ``(human, judge_on_human, judge_only, judge_only_credit)``."""
    scores = np.asarray(scores, float)
    k = len(scores)
    flat = 0.6 * scores  # the judge's own view: differences flattened, and a lean to the lower index
    out = []
    for n in (n_human, n_judge):
        a, b = _pairs(rng, k, n)
        human = _verdicts(rng, scores, a, b, tie_rate)
        credit = np.zeros(n)
        for _order in range(2):
            own = _verdicts(rng, flat, a, b, tie_rate, shift=0.3 * np.sign(b - a))
            verdict = np.where(rng.random(n) < agree, human, own)
            credit += np.choose(verdict, [1.0, 0.0, tie_credit, tie_credit]) / 2
        out.append((battles(np.arange(n), a, b, human, n_systems=k), credit))
    return out[0][0], out[0][1], out[1][0], out[1][1]


def likert_scores(rng, n_prompts, *, difference=0.3, prompt_sd=0.8, noise_sd=0.6, judge_noise_sd=0.5):
    """Per-prompt mean scores of systems A and B (B − A = ``difference`` on average) and a judge's scores.

    Each prompt has a difficulty N(0, ``prompt_sd``²) shared by both systems; each system's score adds its own
    noise. The judge scores both systems with its own noise and a bias that cancels in B − A only on average.
    Returns ``(a, b, judge_a, judge_b)``."""
    base = 3.0 + rng.normal(0, prompt_sd, n_prompts)
    quality_a = base + rng.normal(0, noise_sd, n_prompts)
    quality_b = base + difference + rng.normal(0, noise_sd, n_prompts)
    judge_a = quality_a + 0.2 + rng.normal(0, judge_noise_sd, n_prompts)
    judge_b = quality_b + 0.4 + rng.normal(0, judge_noise_sd, n_prompts)
    return quality_a, quality_b, judge_a, judge_b
