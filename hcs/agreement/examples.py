"""Published reliability data sets, for doctests, tests and a researcher's own checks."""

from __future__ import annotations

import numpy as np

nan = np.nan

# Fleiss, J. L. (1971). Measuring nominal scale agreement among many raters.
# Psychological Bulletin 76(5), 378–382: 30 patients, 6 psychiatrists, 5 diagnoses
# (1 depression, 2 personality disorder, 3 schizophrenia, 4 neurosis, 5 other).
# Distributed as ``diagnoses`` in R's irr package; irr::kappam.fleiss gives κ = 0.4302445.
FLEISS_1971_DIAGNOSES = np.array(
    [
        [4, 4, 4, 4, 4, 4],
        [2, 2, 2, 5, 5, 5],
        [2, 3, 3, 3, 3, 5],
        [5, 5, 5, 5, 5, 5],
        [2, 2, 2, 4, 4, 4],
        [1, 1, 3, 3, 3, 3],
        [3, 3, 3, 3, 5, 5],
        [1, 1, 3, 3, 3, 4],
        [1, 1, 4, 4, 4, 4],
        [5, 5, 5, 5, 5, 5],
        [1, 4, 4, 4, 4, 4],
        [1, 2, 4, 4, 4, 4],
        [2, 2, 2, 3, 3, 3],
        [1, 4, 4, 4, 4, 4],
        [2, 2, 4, 4, 4, 5],
        [3, 3, 3, 3, 3, 5],
        [1, 1, 1, 4, 5, 5],
        [1, 1, 1, 1, 1, 2],
        [2, 2, 4, 4, 4, 4],
        [1, 3, 3, 5, 5, 5],
        [5, 5, 5, 5, 5, 5],
        [2, 4, 4, 4, 4, 4],
        [2, 2, 4, 5, 5, 5],
        [1, 1, 4, 4, 4, 4],
        [1, 4, 4, 4, 4, 5],
        [2, 2, 2, 2, 2, 4],
        [1, 1, 1, 1, 5, 5],
        [2, 2, 4, 4, 4, 4],
        [1, 3, 3, 3, 3, 3],
        [5, 5, 5, 5, 5, 5],
    ]
)

# Krippendorff, K. (2011). Computing Krippendorff's Alpha-Reliability. Annenberg School
# for Communication, University of Pennsylvania, section C (observers × units, missing
# values allowed): α_nominal = 0.743, α_ordinal = 0.815, α_interval = 0.849, α_ratio = 0.797.
# Rows are the observers A–D, columns the 12 units. Gwet (2014) uses the same units as
# ``raw_4raters`` (irrCAC): AC1 = 0.7754; AC2 with ordinal weights = 0.899.
KRIPPENDORFF_2011_RELIABILITY = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
        [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
    ]
)
