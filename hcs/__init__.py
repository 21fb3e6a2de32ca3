"""Pure-Python statistics for human evaluation: rubric, scoring, agreement, calibration.

This package never imports Django, so the same numbers can be computed in a notebook
from an exported CSV.
"""
