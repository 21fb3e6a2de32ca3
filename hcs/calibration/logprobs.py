"""A judge's score read from its token probabilities: the score token's distribution, G-Eval's
probability-weighted score, a per-item confidence, and the calibration error of pointwise judges.

G-Eval (Liu, Iter, Xu, Wang, Xu & Zhu, 2023, "G-Eval: NLG Evaluation using GPT-4 with Better Human
Alignment", EMNLP, eq. 1) scores an answer as the expectation of the score over the probabilities
the model gives each score token, score = Σ_i p(s_i) · s_i, which breaks the ties of integer scores.
The confidence of an item is the probability of the score the judge wrote, renormalised over the
scale's score tokens; at temperature 0 that is the most likely score, the top-class probability Guo
et al. (2017) calibrate.

Only integer scales have score tokens (``4`` is one token; ``0.75`` is several), so a 0–1 judge gets
no distribution.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from hcs.calibration.confidence import DEFAULT_BINS, Reliability, reliability

MAX_INTEGER_SCALE = 10  # scale points beyond which a score is rarely a single token
_KEY_WINDOW = 60  # characters before a score token searched for the key that names it


@dataclass(frozen=True)
class ScoreDistribution:
    """The score token's distribution, renormalised over the scale's scores.

    ``mass`` is the probability the model put on score tokens at all (before renormalising); a low
    mass means the top tokens were mostly something else.
    """

    probabilities: Mapping[int, float]
    mass: float

    @property
    def weighted(self) -> float:
        """G-Eval's probability-weighted score, Σ p(s) · s."""
        return float(sum(s * p for s, p in self.probabilities.items()))

    @property
    def top(self) -> int:
        """The most likely score (the lower one on a tie)."""
        return min(self.probabilities, key=lambda s: (-self.probabilities[s], s))

    @property
    def confidence(self) -> float:
        """The probability of the most likely score."""
        return float(max(self.probabilities.values()))

    def probability(self, score: float) -> float:
        """The probability of ``score`` (0 when no top token spelled it)."""
        return float(self.probabilities.get(int(score), 0.0)) if score == int(score) else 0.0

    def to_json(self) -> dict:
        return {
            "probabilities": {str(s): p for s, p in sorted(self.probabilities.items())},
            "mass": self.mass,
            "weighted": self.weighted,
        }


def integer_scale(lo: float, hi: float) -> tuple[int, ...] | None:
    """The scores of an integer scale, or None when the scale is not one (0–1) or too wide for single tokens.

    >>> integer_scale(1, 5)
    (1, 2, 3, 4, 5)
    >>> integer_scale(0, 1) is None
    True
    """
    if lo != int(lo) or hi != int(hi) or hi - lo < 2 or hi - lo > MAX_INTEGER_SCALE:
        return None
    return tuple(range(int(lo), int(hi) + 1))


def distribution(
    top_logprobs: Sequence[tuple[str, float]], scores: Sequence[int]
) -> ScoreDistribution | None:
    """The distribution over ``scores`` from one token's top log-probabilities (tokens ``" 4"``, ``"4"``
    and ``'"4'`` all count for 4; a score seen under several spellings adds up). None when no top token is a score.

    >>> d = distribution([("4", math.log(0.6)), ("5", math.log(0.3)), ("x", math.log(0.1))], range(1, 6))
    >>> round(d.weighted, 6), d.top, round(d.confidence, 6), round(d.mass, 6)
    (4.333333, 4, 0.666667, 0.9)
    """
    wanted = {str(s): s for s in scores}
    probs: dict[int, float] = {}
    for token, logprob in top_logprobs:
        score = wanted.get(str(token).strip().strip("\"'*"))
        if score is None or logprob is None or not math.isfinite(float(logprob)):
            continue
        probs[score] = probs.get(score, 0.0) + math.exp(float(logprob))
    mass = sum(probs.values())
    if not probs or mass <= 0:
        return None
    return ScoreDistribution({s: p / mass for s, p in sorted(probs.items())}, float(mass))


def score_token(
    tokens: Sequence[str], value: float, *, key: str | None = None, after: str | None = None
) -> int | None:
    """The index of the token that wrote ``value``: the last token spelling it whose preceding text names
    ``key`` nearby (``"score": 4``, ``Score: 4``), else the last token spelling it. With ``after`` (a
    dimension's key in a JSON answer), the first such token after the last mention of ``after``.
    None when no token spells it.

    >>> score_token(['{"', 'reason', '":"', 'A', ' 4', '-step', ' plan', '","', 'score', '":', '3', '}'], 3, key="score")
    10
    >>> toks = ['{"a":', '{"score":', '4', '},', '"b":', '{"score":', '4', '}}']
    >>> score_token(toks, 4, key="score", after='"a"'), score_token(toks, 4, key="score", after='"b"')
    (2, 6)
    """
    if value != int(value):
        return None
    spelled = str(int(value))
    ends, text = [], ""
    for token in tokens:
        text += token
        ends.append(len(text))
    candidates = [i for i, t in enumerate(tokens) if t.strip().strip("\"'*") == spelled]
    if after is not None:
        begin = text.rfind(after)
        candidates = [i for i in candidates if begin >= 0 and ends[i] - len(tokens[i]) >= begin]
        candidates = candidates[:1] if not key else candidates
    if key:
        near = re.compile(re.escape(key) + r"[\"'*\s]*[:=]?[\"'*\s]*$", re.IGNORECASE)
        for i in candidates if after is not None else reversed(candidates):
            start = ends[i] - len(tokens[i])
            if near.search(text[max(0, start - _KEY_WINDOW) : start]):
                return i
    if not candidates:
        return None
    return candidates[0] if after is not None else candidates[-1]


def pointwise_correct(given, human, *, step: float) -> np.ndarray:
    """Whether each item's judge score is the human mean's score: within half a judge step of it (both on
    the rubric scale). NaN human means count as not comparable and are returned False.

    >>> pointwise_correct([4, 4, 2], [4.4, 3.4, np.nan], step=1.0).tolist()
    [True, False, False]
    """
    given, human = np.asarray(given, dtype=float), np.asarray(human, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.isfinite(human) & (np.abs(given - human) <= step / 2 + 1e-9)


def pointwise_reliability(
    confidence, given, human, *, step: float, n_bins: int = DEFAULT_BINS
) -> Reliability:
    """ECE of a pointwise judge (Guo et al., 2017, eq. 3): its confidence in the score it gave against how
    often that score is the human mean's. Items without a human mean or a confidence are left out.

    >>> r = pointwise_reliability([0.9, 0.9, 0.6, 0.6], [4, 4, 2, 2], [4.1, 2.0, 2.2, 1.9], step=1.0)
    >>> round(r.ece, 6), r.n
    (0.4, 4)
    """
    confidence = np.asarray(confidence, dtype=float)
    human = np.asarray(human, dtype=float)
    keep = np.isfinite(human) & np.isfinite(confidence)
    right = pointwise_correct(np.asarray(given, dtype=float)[keep], human[keep], step=step)
    return reliability(confidence[keep], right, n_bins=n_bins)
