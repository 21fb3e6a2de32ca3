"""A batch's report with the options a researcher can set: bootstrap resamples, seed and the
alt-test's margin ε. The export command, the background job and the API all build reports here,
so an option means the same whichever door it comes through."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from annotator.models import Batch
from hcs.defaults import DEFAULT_EPSILON, DEFAULT_RESAMPLES, DEFAULT_SEED

if TYPE_CHECKING:
    from annotator.reports.selectors.batch_report import BatchReport

MAX_RESAMPLES = 100_000
# numpy's generators take any non-negative integer; a bigint's range keeps the seed storable and exact in JSON.
MAX_SEED = 2**63 - 1


@dataclass(frozen=True)
class ReportOptions:
    n_resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED
    epsilon: float = DEFAULT_EPSILON

    def errors(self) -> list[str]:
        problems = []
        if not 0 <= self.n_resamples <= MAX_RESAMPLES:
            problems.append(f"resamples must lie between 0 (no intervals) and {MAX_RESAMPLES:,}")
        if not 0 <= self.epsilon < 1:
            problems.append("epsilon must lie in [0, 1)")
        if not 0 <= self.seed <= MAX_SEED:
            problems.append(f"seed must be a whole number from 0 to {MAX_SEED}")
        return problems

    def to_params(self) -> dict:
        return {"n_resamples": self.n_resamples, "seed": self.seed, "epsilon": self.epsilon}


def report_with_options(*, batch: Batch, options: ReportOptions | None = None) -> BatchReport:
    # Imported here: the API's schema takes ReportOptions when the app starts; the report (numpy, scipy)
    # is loaded by the first request that builds one.
    from annotator.reports.selectors.batch_report import batch_report

    options = options or ReportOptions()
    errors = options.errors()
    if errors:
        raise ValueError("; ".join(errors))
    return batch_report(
        batch=batch, n_resamples=options.n_resamples, seed=options.seed, epsilon=options.epsilon
    )
