"""The judges' part of the Hugging Face dataset: the ``judge_scores`` and ``pairwise_verdicts`` configs
and the card's calibration summary, named in ``annotator.reports.hf.parts`` (``HF_PARTS``,
``HF_CARD_SECTIONS``).

The configs hold the rows of the judge CSV exports (:mod:`annotator.judges.exports.tables`); the
columns of ``judge_scores`` are the ones that module's ``JUDGE_SCORES_TABLE`` publishes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from annotator.judges.exports import tables
from annotator.models import Batch, JudgeCriterionScore
from annotator.reports.hf.card import UNDEFINED, cell, number, with_ci
from annotator.reports.hf.parts import PartTable

if TYPE_CHECKING:
    from annotator.reports.selectors.batch_report import BatchReport

# A verdict's own criterion scores, one record per criterion (the CSV spreads them over columns).
CRITERION_SCORES = pa.list_(
    pa.struct([("criterion", pa.string()), ("rubric_dimension", pa.string()), ("raw_value", pa.float64())])
)
PAIRWISE_SCHEMA = pa.schema(
    [
        ("judge", pa.string()),
        ("judge_version", pa.string()),
        ("prompt_id", pa.string()),
        ("baseline_system", pa.string()),
        ("enhanced_system", pa.string()),
        ("order_sent", pa.string()),
        ("winner", pa.string()),
        ("confidence", pa.float64()),
        ("criterion_scores", CRITERION_SCORES),
    ]
)


def judge_scores_schema() -> pa.Schema:
    """The published columns of ``judge_scores.csv``, read when a dataset is written."""
    return pa.schema(
        [(name, pa.type_for_alias(kind)) for name, kind in tables.JUDGE_SCORES_PUBLISHED.items()]
    )


def judge_scores_table(batch: Batch) -> PartTable:
    """The rows of ``judge_scores.csv``, in its order, with its published columns."""
    schema = judge_scores_schema()
    return PartTable(
        schema, [tuple(row[c] for c in schema.names) for _, row in tables.judge_score_rows(batch=batch)]
    )


def pairwise_verdicts_table(batch: Batch) -> PartTable:
    """The rows of ``pairwise_verdicts.csv``, in the run's orientation, with the criterion scores as a
    list of records."""
    dimension_of = dict(
        JudgeCriterionScore.objects.filter(item__batch=batch, enhanced__isnull=False)
        .values_list("criterion", "rubric_dimension")
        .distinct()
    )

    def criterion_scores(row: dict) -> list[dict]:
        return [
            {"criterion": name, "rubric_dimension": dimension_of.get(name), "raw_value": raw}
            for name, raw in sorted(row["criteria"].items())
        ]

    plain = PAIRWISE_SCHEMA.names[:-1]
    return PartTable(
        PAIRWISE_SCHEMA,
        [
            (*(row[c] for c in plain), criterion_scores(row))
            for _, row in tables.pairwise_verdict_rows(batch=batch)
        ],
    )


def judge_calibration_lines(report: BatchReport) -> list[str]:
    """The card's calibration summary: each judge × dimension of the report's ``judges`` section."""
    section = report.sections.get("judges")
    data = section.to_json() if section is not None else {}
    rows = [(judge, dim, d) for judge, dims in data.items() for dim, d in dims.items() if "spearman" in d]
    if not rows:
        return ["No LLM judge scored this batch's items."]
    out = [
        "How each judge's scores follow the people's mean score per item (the excluded raters' scores left out). "
        "The alt-test (Calderon et al., 2025) asks whether the judge could replace a human annotator.",
        "",
        "| Judge | Dimension | n | Spearman ρ [95% CI] | Kendall τ | MAE | Bias | QWK | Alt-test passed |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for judge, dim, d in rows:
        passed = (d.get("alt_test") or {}).get("passed")
        out.append(
            f"| {cell(judge)} | {cell(dim)} | {d['n']} | {with_ci(d['spearman'], d.get('spearman_ci95'))} "
            f"| {number(d['kendall'])} | {number(d['mae'])} | {number(d['bias'])} | {number(d['qwk'])} "
            f"| {UNDEFINED if passed is None else ('yes' if passed else 'no')} |"
        )
    return out
