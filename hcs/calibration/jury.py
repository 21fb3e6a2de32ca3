"""A jury of LLM judges: one virtual judge whose score is its members' mean and whose pairwise verdict is their
majority (Verga et al., 2024, "Replacing Judges with Juries: Evaluating LLM Generations with a Panel of
Diverse Models", arXiv:2404.18796, which pools scores by average and verdicts by vote).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

TIE = "tie"


def jury_score(values: Sequence[float]) -> float:
    """The members' mean score.

    Parameters
    ----------
    values : sequence of float
        Each member's score of one item on one dimension, on the same scale.

    Returns
    -------
    float

    Examples
    --------
    >>> jury_score([3.0, 4.0, 5.0])
    4.0
    """
    if len(values) == 0:
        raise ValueError("a jury score needs at least one member's score")
    return float(np.mean(np.asarray(values, dtype=float)))


def jury_verdict(winners: Sequence[str]) -> str:
    """The members' majority winner; ``"tie"`` when no label has more votes than every other.

    Examples
    --------
    >>> jury_verdict(["enhanced", "enhanced", "baseline"])
    'enhanced'
    >>> jury_verdict(["enhanced", "baseline"])
    'tie'
    """
    if len(winners) == 0:
        raise ValueError("a jury verdict needs at least one member's verdict")
    (first, n), *rest = Counter(winners).most_common() + [(None, 0)]
    return first if n > rest[0][1] else TIE
