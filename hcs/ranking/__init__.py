"""Comparing systems: Bradley–Terry leaderboards with bootstrap intervals over prompts, prediction-powered
rank-sets, position bias, and paired differences of Likert scores (docs/ranking-statistics.md)."""
