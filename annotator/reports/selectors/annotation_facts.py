"""What annotators entered beside their scores, summed for the researchers' exports: how often
each rubric flag was set (``prompt_ambiguous`` included) and the per-constraint answers."""

from __future__ import annotations

from typing import Any

from annotator.models import Annotation
from hcs.rubric import Rubric


def annotation_facts(*, batch_id: int, rubric: Rubric) -> dict[str, Any]:
    """``{"flags": {key: {label, n_annotations, n_items}}, "constraint_answers": {...}}``.

    One streamed query over the batch's annotations (flags and answers are JSON lists, which
    SQLite cannot count in SQL)."""
    flag_annotations = dict.fromkeys(rubric.flag_keys, 0)
    flag_items: dict[str, set[int]] = {key: set() for key in rubric.flag_keys}
    by_constraint: dict[str, dict[str, int]] = {}
    answered = 0
    rows = Annotation.objects.filter(item__batch_id=batch_id).values_list(
        "item_id", "flags", "constraints_met", "item__constraints"
    )
    for item_pk, flags, met, constraints in rows.iterator(chunk_size=10_000):
        for key in flags or ():
            if key in flag_annotations:
                flag_annotations[key] += 1
                flag_items[key].add(item_pk)
        met, constraints = list(met or []), list(constraints or [])
        if met and len(met) == len(constraints):
            answered += 1
            for text, ok in zip(constraints, met, strict=True):
                counts = by_constraint.setdefault(str(text), {"met": 0, "not_met": 0})
                counts["met" if ok else "not_met"] += 1
    labels = {f.key: f.label for f in rubric.flags}
    return {
        "flags": {
            key: {
                "label": labels[key],
                "n_annotations": flag_annotations[key],
                "n_items": len(flag_items[key]),
            }
            for key in rubric.flag_keys
        },
        "constraint_answers": {"n_annotations_answered": answered, "by_constraint": by_constraint},
    }
