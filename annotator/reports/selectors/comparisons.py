"""The report section ``comparisons``: is system B better than A, prompt by prompt (``hcs.ranking.paired``).

Systems answer the same prompts when their items share a ``prompt_id`` (items with an empty one pair with
nothing). For each pair of systems (A before B by name) and each rubric dimension and the overall HCS, the
value of a system on a prompt is the mean, over its items there, of each item's human mean (the report's
arrays: excluded annotators left out; overall is the report's own per-annotation HCS). The difference
B − A is paired by prompt (:func:`hcs.ranking.paired.paired_difference`, a Student *t* interval).

PPI++ (:func:`hcs.ranking.paired.ppi_paired_difference`) adds a judge's scores on every prompt it scored
both systems on, people's on the prompts they rated both on. It rests on the labelled prompts being a
random sample, so it follows the judges section's verdict on the labelled set (``ppi.sample``): with
``not_random`` the estimate is withheld, and with ``recorded_draw`` too (the draw's labels need their 1/π
weights, which the paired estimator does not take). Each judge gets an estimate (``ppi_by_judge``); ``ppi``
is the first judge by name with one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations
from typing import Any, ClassVar

import numpy as np
from django.db.models import Count, Max

from annotator.models import Batch, Item, JudgeScore
from annotator.reports.selectors.arrays import ReportArrays
from annotator.reports.selectors.batch_report import annotation_overall
from annotator.reports.selectors.sections import SectionInputs
from hcs.ranking.paired import paired_difference, ppi_paired_difference
from hcs.rubric import Rubric
from hcs.scoring import item_summaries

# The judges' name for the overall HCS (``annotator.judges.models.judge.OVERALL``), as in their scores
# and in the JSON: the core report reaches the judges package only through its tables.
OVERALL = "overall"
# ``annotator.judges.selectors.sample``'s kinds of labelled set that the paired PPI++ cannot use.
NOT_RANDOM, RECORDED_DRAW = "not_random", "recorded_draw"
WHY_DRAW = (
    "a recorded review draw is in force: its labels were drawn with probabilities π that follow the judges' "
    "uncertainty and need 1/π weights, which the paired PPI++ difference does not take, so unweighted it "
    "would be biased"
)
WHY_NO_SAMPLE = (
    "the judges section, which says whether the labelled set is a random sample, is not in this report"
)


@dataclass(frozen=True)
class ComparisonPPI:
    """PPI++ of one comparison with one judge; ``estimate`` and ``ci95`` are None when withheld."""

    judge: str | None
    sample: str | None  # the labelled set's kind (``judges.<judge>.<dim>.ppi.sample``)
    estimate: float | None
    ci95: tuple[float | None, float | None]
    n_labelled: int  # prompts with people's scores on both systems and the judge's
    n_unlabelled: int  # prompts with the judge's scores on both systems only
    withheld_because: str | None = None
    ci95_batch: tuple[float | None, float | None] = (None, None)  # for the mean over these prompts alone

    def to_json(self) -> dict[str, Any]:
        return {
            "estimate": self.estimate,
            "ci95": list(self.ci95),
            "ci95_batch": list(self.ci95_batch),
            "judge": self.judge,
            "sample": self.sample,
            "n_prompts_labelled": self.n_labelled,
            "n_prompts_unlabelled": self.n_unlabelled,
            "withheld_because": self.withheld_because,
        }


@dataclass(frozen=True)
class Comparison:
    system_a: str
    system_b: str
    dimension: str  # a rubric key or ``overall``
    label: str
    mean_difference: float | None  # B − A over the prompts people rated both on; None with none
    ci95: tuple[float | None, float | None]  # paired t; None with fewer than two prompts
    n_prompts: int
    unpaired_ci95: tuple[float | None, float | None]  # Welch's, for comparison
    ppi: ComparisonPPI
    ppi_by_judge: tuple[ComparisonPPI, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "system_a": self.system_a,
            "system_b": self.system_b,
            "dimension": self.dimension,
            "mean_difference": self.mean_difference,
            "ci95": list(self.ci95),
            "n_prompts": self.n_prompts,
            "unpaired_ci95": list(self.unpaired_ci95),
            "ppi": self.ppi.to_json(),
            "ppi_by_judge": {p.judge: p.to_json() for p in self.ppi_by_judge},
        }


@dataclass(frozen=True)
class ComparisonsSection:
    template: ClassVar[str] = "annotator/_report_comparisons.html"

    systems: tuple[str, ...]
    n_prompts_shared: int  # prompts answered by at least two systems
    comparisons: tuple[Comparison, ...]
    why_none: str = ""  # with no comparison: why
    sample_why: str = ""  # the judges section's sentence on the labelled set

    def to_json(self) -> list[dict[str, Any]]:
        return [c.to_json() for c in self.comparisons]

    def ppi_withheld_everywhere(self) -> str:
        """The one reason PPI++ is withheld on every row (the page says it once), or ""."""
        reasons = {c.ppi.withheld_because for c in self.comparisons}
        return (next(iter(reasons)) or "") if len(reasons) == 1 else ""


@dataclass(frozen=True)
class _Prompts:
    """The item rows' prompts: ``index`` per item row (−1: no prompt id) and how many there are."""

    index: np.ndarray
    n: int


def _item_prompts(batch: Batch, arrays: ReportArrays) -> _Prompts:
    row_of = {int(pk): row for row, pk in enumerate(arrays.item_pk)}
    index = np.full(len(arrays.item_pk), -1, dtype=np.int64)
    codes: dict[str, int] = {}
    for pk, prompt_id in (
        Item.objects.filter(batch=batch).exclude(prompt_id="").values_list("pk", "prompt_id")
    ):
        row = row_of.get(pk)
        if row is not None:
            index[row] = codes.setdefault(prompt_id, len(codes))
    return _Prompts(index, len(codes))


def per_prompt(values: np.ndarray, item_system: np.ndarray, prompts: _Prompts, n_systems: int) -> np.ndarray:
    """systems × prompts: the mean of ``values`` (one per item row, NaN = none) over each system's items on
    each prompt; NaN where it has none with a value."""
    ok = np.isfinite(values) & (prompts.index >= 0)
    cell = item_system[ok] * prompts.n + prompts.index[ok]
    size = n_systems * prompts.n
    n = np.bincount(cell, minlength=size)
    total = np.bincount(cell, weights=values[ok], minlength=size)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (total / n).reshape(n_systems, prompts.n)


def _human_item_values(rubric: Rubric, arrays: ReportArrays) -> dict[str, np.ndarray]:
    """Per dimension and overall: each item row's human mean (NaN: nobody rated it)."""
    n_items = len(arrays.item_pk)
    out = {
        key: item_summaries(arrays.annotation_item, arrays.annotation_scores[:, j], n_items=n_items).mean
        for j, key in enumerate(rubric.dimension_keys)
    }
    out[OVERALL] = item_summaries(
        arrays.annotation_item, annotation_overall(rubric, arrays), n_items=n_items
    ).mean
    return out


def _judge_item_values(
    batch: Batch, rubric: Rubric, arrays: ReportArrays
) -> dict[str, dict[str, np.ndarray]]:
    """{judge: {dimension: score per item row on the rubric's scale (NaN: not scored)}}, by judge name; a judge
    without overall scores of its own gets the rubric's weighted sum where it scored every dimension."""
    row_of = {int(pk): row for row, pk in enumerate(arrays.item_pk)}
    n_items, keys = len(arrays.item_pk), (*rubric.dimension_keys, OVERALL)
    out: dict[str, dict[str, np.ndarray]] = {}
    rows = JudgeScore.objects.filter(item__batch=batch, dimension__in=keys).values_list(
        "judge__name", "dimension", "item", "value"
    )
    for judge, dimension, item, value in rows.order_by("judge__name"):
        row = row_of.get(item)
        if row is not None and value is not None:
            out.setdefault(judge, {}).setdefault(dimension, np.full(n_items, np.nan))[row] = value
    for scores in out.values():
        if OVERALL not in scores and all(key in scores for key in rubric.dimension_keys):
            by_dimension = np.stack([scores[key] for key in rubric.dimension_keys])
            scores[OVERALL] = np.array(
                [
                    math.nan if total is None else total
                    for total in (
                        rubric.overall(dict(zip(rubric.dimension_keys, column))) for column in by_dimension.T
                    )
                ],
                dtype=float,
            )
    return out


def _labelled_sample(inputs: SectionInputs) -> tuple[str | None, str, str]:
    """(kind, why, fix) of the judges section's labelled sample, or (None, …) when it has none."""
    judges = inputs.sections.get("judges")
    for entry in getattr(judges, "ppi", ()) or ():
        sample = getattr(entry, "sample", None)
        if sample is not None:
            return sample.kind, sample.why, sample.fix
    return None, "", ""


def _interval(ci) -> tuple[float | None, float | None]:
    return (None, None) if ci is None else (float(ci[0]), float(ci[1]))


def _human_difference(a: np.ndarray, b: np.ndarray) -> tuple[float | None, tuple, int, tuple]:
    both = np.isfinite(a) & np.isfinite(b)
    n = int(both.sum())
    if n == 0:
        return None, (None, None), 0, (None, None)
    if n == 1:
        return float(b[both][0] - a[both][0]), (None, None), 1, (None, None)
    r = paired_difference(a[both], b[both])
    return r.mean_difference, _interval(r.ci95), n, _interval(r.unpaired_ci95)


def _ppi(judge: str, ha, hb, ja, jb, sample: tuple[str | None, str, str]) -> ComparisonPPI:
    judged = np.isfinite(ja) & np.isfinite(jb)
    labelled = judged & np.isfinite(ha) & np.isfinite(hb)
    rest = judged & ~labelled
    n_lab, n_rest = int(labelled.sum()), int(rest.sum())
    kind, why, fix = sample
    withheld = None
    if kind is None:
        withheld = WHY_NO_SAMPLE
    elif kind == NOT_RANDOM:
        withheld = f"the labelled set is not a random sample: {why}" + (f" (to fix: {fix})" if fix else "")
    elif kind == RECORDED_DRAW:
        withheld = WHY_DRAW
    r = None
    if withheld is None:
        r = ppi_paired_difference(ha[labelled], hb[labelled], ja[labelled], jb[labelled], ja[rest], jb[rest])
        if r is None:
            withheld = (
                f"people rated both systems on {n_lab} of the prompts the judge scored: PPI++ needs two"
            )
    if r is None:
        return ComparisonPPI(judge, kind, None, (None, None), n_lab, n_rest, withheld)
    return ComparisonPPI(
        judge, kind, r["estimate"], _interval(r["ci95"]), n_lab, n_rest, None, _interval(r["ci95_batch"])
    )


def _no_judge(kind: str | None) -> ComparisonPPI:
    return ComparisonPPI(
        None, kind, None, (None, None), 0, 0, "no judge scored both systems on this dimension"
    )


def comparisons_report(
    *, batch: Batch, arrays: ReportArrays, sample: tuple[str | None, str, str] = (None, "", "")
) -> ComparisonsSection:
    """Every pair of systems × (each dimension, overall HCS) over the prompts they share; ``sample`` is the
    labelled set's (kind, why, fix) as the judges section gives it."""
    rubric = batch.rubric_obj
    systems = tuple(arrays.system_names)  # sorted by name: A before B
    prompts = _item_prompts(batch, arrays)
    shared = per_prompt(np.ones(len(arrays.item_pk)), arrays.item_system, prompts, len(systems))
    n_shared = int((np.isfinite(shared).sum(axis=0) >= 2).sum()) if prompts.n else 0
    why = ""
    if len(systems) < 2:
        why = f"the batch has {'one system' if systems else 'no system'}: a comparison needs two answering the same prompts"
    elif n_shared == 0:
        why = "no two systems answer the same prompt: items are paired by their prompt_id, and none is shared"
    if why:
        return ComparisonsSection(systems, n_shared, (), why, sample[1])
    human = {
        d: per_prompt(v, arrays.item_system, prompts, len(systems))
        for d, v in _human_item_values(rubric, arrays).items()
    }
    judged = {
        judge: {d: per_prompt(v, arrays.item_system, prompts, len(systems)) for d, v in by_dim.items()}
        for judge, by_dim in _judge_item_values(batch, rubric, arrays).items()
    }
    out = []
    for (a, name_a), (b, name_b) in combinations(enumerate(systems), 2):
        if not (np.isfinite(shared[a]) & np.isfinite(shared[b])).any():
            continue
        for dimension in (*rubric.dimension_keys, OVERALL):
            h = human[dimension]
            mean, ci, n, unpaired = _human_difference(h[a], h[b])
            by_judge = tuple(
                _ppi(judge, h[a], h[b], j[dimension][a], j[dimension][b], sample)
                for judge, j in judged.items()
                if dimension in j and (np.isfinite(j[dimension][a]) & np.isfinite(j[dimension][b])).any()
            )
            first = next(
                (p for p in by_judge if p.estimate is not None),
                by_judge[0] if by_judge else _no_judge(sample[0]),
            )
            label = "Overall HCS" if dimension == OVERALL else rubric.dimension(dimension).label
            out.append(Comparison(name_a, name_b, dimension, label, mean, ci, n, unpaired, first, by_judge))
    return ComparisonsSection(systems, n_shared, tuple(out), "", sample[1])


def comparisons_section(inputs: SectionInputs) -> ComparisonsSection:
    """The report section ``comparisons`` (listed in ``REPORT_SECTIONS``, after ``judges``)."""
    return comparisons_report(batch=inputs.batch, arrays=inputs.arrays, sample=_labelled_sample(inputs))


def batch_has_systems_to_compare(batch: Batch) -> bool:
    """Whether two systems have items with a prompt id (an indexed check; whether they share one is the
    section's to say)."""
    return (
        Item.objects.filter(batch=batch)
        .exclude(prompt_id="")
        .order_by()
        .values("system_id")
        .distinct()[:2]
        .count()
        == 2
    )


def comparisons_revision(batch: Batch) -> list[Any]:
    """What the section reads beyond the core report: the items' prompt ids and the judges' scores."""
    changed = {"n": Count("pk"), "last": Max("pk")}
    return [
        Item.objects.filter(batch=batch).exclude(prompt_id="").aggregate(**changed),
        JudgeScore.objects.filter(item__batch=batch).aggregate(**changed),
    ]
