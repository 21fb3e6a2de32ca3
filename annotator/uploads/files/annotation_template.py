"""The columns of the annotation template (``templates/annotation_template.csv``) and its
``constraints_met`` cell, written by the annotations export and read by the annotation import.
No pandas here: the export imports this module, the file parser imports it too."""

from __future__ import annotations

from hcs.rubric import Rubric

CONSTRAINTS_MET = "constraints_met"
# The exports' last column: whether the annotator is excluded from the batch's statistics. The
# import accepts and ignores it, so an exported file loads as it is.
EXCLUDED = "excluded"
MET_WORDS = {
    "met": True,
    "1": True,
    "yes": True,
    "true": True,
    "not met": False,
    "not_met": False,
    "0": False,
    "no": False,
    "false": False,
}


def template_columns(rubric: Rubric) -> list[str]:
    """The columns of ``templates/annotation_template.csv`` for ``rubric``: every flag, and the
    per-constraint answers (``met;not_met``, in the order of the item's constraints)."""
    return [
        "item_id",
        "system_id",
        "prompt",
        "response",
        "annotator",
        *rubric.dimension_keys,
        *rubric.flag_keys,
        CONSTRAINTS_MET,
        "comment",
    ]


def format_constraints_met(met) -> str:
    return ";".join("met" if m else "not_met" for m in met or [])


def parse_constraints_met(cell: str) -> list[bool] | None:
    """``met;not_met;...`` (also 1/0, yes/no) to booleans; [] for blank; None if unreadable."""
    if not cell.strip():
        return []
    answers = [MET_WORDS.get(part.strip().lower()) for part in cell.split(";")]
    return None if None in answers else answers
