"""The defaults a caller of the statistics can change: bootstrap resamples and seed, the alt-test's ε.

Defined here, without numpy, so that a form or an API schema can show them without loading the
statistics; ``hcs.agreement.bootstrap`` and ``hcs.calibration.alt_test`` re-export them.
"""

DEFAULT_RESAMPLES = 1000  # bootstrap resamples per interval
DEFAULT_SEED = 20240601  # the bootstrap's seed (the seed rule: hcs.agreement.bootstrap)
DEFAULT_EPSILON = 0.2  # the alt-test's cost-benefit margin ε granted to the judge
