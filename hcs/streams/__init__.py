"""Continuous calibration of online judges: statistics per window of a judged stream, and change alerts.

A stream of production traces is scored by LLM judges; a fixed random sample (the hash rule) is also
rated by k people. :mod:`hcs.streams.series` gives one window's statistics with the batch report's
functions; :mod:`hcs.streams.alerts` watches the windows for judge drift, product changes and rater
drift with anytime-valid detectors (:mod:`hcs.streams.betting` for the confidence sequences).
"""

from hcs.streams.alerts import (
    Alert,
    Detection,
    detect_changes,
    item_agreement,
    item_level,
    item_rater_agreement,
    stream_alerts,
)
from hcs.streams.betting import betting_cs, lower_bound, upper_bound
from hcs.streams.series import WindowStatistics, window_statistics

__all__ = [
    "Alert",
    "Detection",
    "WindowStatistics",
    "betting_cs",
    "detect_changes",
    "item_agreement",
    "item_level",
    "item_rater_agreement",
    "lower_bound",
    "stream_alerts",
    "upper_bound",
    "window_statistics",
]
