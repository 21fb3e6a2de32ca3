"""Comparing systems: Bradley–Terry leaderboards with bootstrap intervals over prompts, prediction-powered
rank-sets, position bias, and paired differences of Likert scores (docs/ranking-statistics.md).

:mod:`hcs.ranking.battles` checks and counts the battles; :mod:`hcs.ranking.bt` fits Bradley–Terry or
Davidson by maximum likelihood; :mod:`hcs.ranking.leaderboard` adds the bootstrap over prompts and rank
intervals; :mod:`hcs.ranking.ppr` gives prediction-powered rank-sets; :mod:`hcs.ranking.paired` the paired
Likert differences (with PPI++) and the left-choice rate.
"""

from hcs.ranking.battles import OUTCOMES, Battles, battles, prompt_counts
from hcs.ranking.bt import fit_counts, standing
from hcs.ranking.leaderboard import Leaderboard, SystemScore, leaderboard
from hcs.ranking.paired import (
    LeftChoice,
    PairedDifference,
    left_choice_rate,
    paired_difference,
    ppi_paired_difference,
)
from hcs.ranking.ppr import PPRanking, judge_credit, prediction_powered_ranking, rank_sets

__all__ = [
    "OUTCOMES",
    "Battles",
    "Leaderboard",
    "LeftChoice",
    "PPRanking",
    "PairedDifference",
    "SystemScore",
    "battles",
    "fit_counts",
    "judge_credit",
    "leaderboard",
    "left_choice_rate",
    "paired_difference",
    "ppi_paired_difference",
    "prediction_powered_ranking",
    "prompt_counts",
    "rank_sets",
    "standing",
]
