"""How an LLM judge's scores compare with people's: correlations with the human mean, agreement on the
rubric's categories, the human ceiling, Krippendorff's α with and without the judge, the Alternative
Annotator Test, and pairwise verdicts. Pure Python (numpy/scipy/krippendorff); no Django.
"""

from hcs.calibration.alt_test import (
    AltTestResult,
    AnnotatorComparison,
    alt_test,
    benjamini_yekutieli,
)
from hcs.calibration.metrics import (
    JudgeCalibration,
    bootstrap_ci,
    calibrate_judge,
    confusion_matrix,
    human_ceiling,
    quadratic_weighted_kappa,
    round_half_up,
)
from hcs.calibration.pairwise import (
    PairOutcome,
    PairwiseComparison,
    compare_verdicts,
    human_preference,
    pair_outcomes,
)

__all__ = [
    "AltTestResult",
    "AnnotatorComparison",
    "JudgeCalibration",
    "PairOutcome",
    "PairwiseComparison",
    "alt_test",
    "benjamini_yekutieli",
    "bootstrap_ci",
    "calibrate_judge",
    "compare_verdicts",
    "confusion_matrix",
    "human_ceiling",
    "human_preference",
    "pair_outcomes",
    "quadratic_weighted_kappa",
    "round_half_up",
]
