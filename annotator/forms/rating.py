"""The rating form: scores per rubric dimension, the hard-constraint checklist, flags, comment.

Built from the batch's rubric data, so a second rubric needs no code. The checklist decides
the two constraint flags (``hcs.checklist``); the rubric's rules then decide which scores are
allowed, the same rules the page's JavaScript applies as the annotator ticks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django import forms
from django.template.loader import render_to_string

from hcs.checklist import CHECKLIST_FLAGS, checklist_flags
from hcs.rubric import Rubric

MET, NOT_MET = "met", "not_met"
SCORES_TEMPLATE = "annotator/_score_rows.html"
_scores_cache: dict[tuple, str] = {}


def _cached_scores_html(cache_key: str, chosen: tuple, rows: list) -> str:
    key = (cache_key, chosen)
    html = _scores_cache.get(key)
    if html is None:
        if len(_scores_cache) > 2048:
            _scores_cache.clear()
        html = _scores_cache[key] = render_to_string(SCORES_TEMPLATE, {"rows": rows})
    return html


class RatingForm(forms.Form):
    comment = forms.CharField(required=False, max_length=5000, strip=True)

    def __init__(self, *args, rubric: Rubric, constraints: Sequence[str] = (), cache_key: str = "", **kwargs):
        super().__init__(*args, **kwargs)
        self.rubric = rubric
        self.cache_key = cache_key  # names the rubric, for caching its rendered score rows
        self.constraints = [str(c) for c in constraints]
        for dim in rubric.dimensions:
            self.fields[f"score_{dim.key}"] = forms.TypedChoiceField(
                choices=[(v, str(v)) for v in rubric.levels],
                coerce=int,
                empty_value=None,
                required=False,  # the rubric check below says which one is missing, by name
                error_messages={
                    "invalid_choice": (
                        f"{dim.label}: %(value)s is not a score on the "
                        f"{rubric.scale_min}\u2013{rubric.scale_max} scale."
                    )
                },
            )
        for i, text in enumerate(self.constraints):
            self.fields[f"constraint_{i}"] = forms.ChoiceField(
                choices=[(MET, "Met"), (NOT_MET, "Not met")],
                error_messages={
                    "required": f"Say whether the hard constraint \u201c{text}\u201d is met.",
                    "invalid_choice": f"Answer \u201c{text}\u201d with met or not met.",
                },
            )
        self.fields["flags"] = forms.MultipleChoiceField(
            choices=[(f.key, f.label) for f in self.manual_flags],
            required=False,
            error_messages={"invalid_choice": "%(value)s is not a flag you can set here."},
        )
        self.payload: dict[str, Any] = {}

    @property
    def manual_flags(self):
        """Flags the annotator ticks; the checklist sets the constraint flags when there is one."""
        if self.constraints:
            return [f for f in self.rubric.flags if f.key not in CHECKLIST_FLAGS]
        return list(self.rubric.flags)

    def clean(self):
        """Every problem at once: unanswered constraints, missing scores, broken caps."""
        cleaned = super().clean()
        scores = {d.key: cleaned.get(f"score_{d.key}") for d in self.rubric.dimensions}
        for dim in self.rubric.dimensions:
            if scores[dim.key] is None and f"score_{dim.key}" not in self.errors:
                self.add_error(None, f"{dim.label} needs a score.")
        flags = list(cleaned.get("flags") or [])
        answers = [cleaned.get(f"constraint_{i}") for i in range(len(self.constraints))]
        met = [a == MET for a in answers]
        if self.constraints:
            flags = [f for f in flags if f not in CHECKLIST_FLAGS]
            if all(answers):
                flags += sorted(checklist_flags(met, self.rubric.flag_keys))
        flags = [f.key for f in self.rubric.flags if f.key in set(flags)]  # rubric order
        for message in self.rubric.validate(scores, flags, require_all=False):
            self.add_error(None, message)
        self.payload = {
            "scores": scores,
            "flags": flags,
            "comment": cleaned.get("comment", ""),
            "constraints_met": met,
        }
        return cleaned

    # ------------------------------------------------------------ for the template
    def dimension_rows(self) -> list[dict[str, Any]]:
        rows = []
        for dim in self.rubric.dimensions:
            bound = self[f"score_{dim.key}"]
            chosen = str(bound.value() or "")
            rows.append(
                {
                    "key": dim.key,
                    "name": bound.html_name,
                    "label": dim.label,
                    "description": dim.description,
                    "errors": bound.errors,
                    "levels": [
                        {"value": v, "text": text, "checked": chosen == str(v)}
                        for v, text in zip(self.rubric.levels, dim.levels, strict=True)
                    ],
                }
            )
        return rows

    def scores_html(self) -> str:
        """The score rows, rendered; the same HTML for every item of a batch with the same
        scores chosen (none, on a new item), so it is cached by rubric and choice."""
        rows = self.dimension_rows()
        if not self.cache_key:
            return render_to_string(SCORES_TEMPLATE, {"rows": rows})
        chosen = tuple(next((lv["value"] for lv in r["levels"] if lv["checked"]), None) for r in rows)
        return _cached_scores_html(self.cache_key, chosen, rows)

    def constraint_rows(self) -> list[dict[str, Any]]:
        rows = []
        for i, text in enumerate(self.constraints):
            bound = self[f"constraint_{i}"]
            rows.append(
                {"index": i, "name": bound.html_name, "text": text, "value": bound.value() or "", "errors": bound.errors}
            )
        return rows

    def flag_rows(self) -> list[dict[str, Any]]:
        chosen = set(self["flags"].value() or [])
        return [
            {"key": f.key, "label": f.label, "description": f.description, "checked": f.key in chosen}
            for f in self.manual_flags
        ]

    def rubric_client_data(self) -> dict[str, Any]:
        """What rate.js needs to apply the caps live, from the same rubric data."""
        return {
            "scale": [self.rubric.scale_min, self.rubric.scale_max],
            "rules": [
                {"flag": r.flag, "dimension": r.dimension, "min": r.min, "max": r.max, "explanation": r.explanation}
                for r in self.rubric.rules
            ],
            "flags": {f.key: f.label for f in self.rubric.flags},
            "checklist_flags": sorted(CHECKLIST_FLAGS & set(self.rubric.flag_keys)),
        }


def initial_from_annotation(annotation, constraints: Sequence[str]) -> dict[str, Any]:
    initial: dict[str, Any] = {f"score_{d}": v for d, v in annotation.scores.values_list("dimension", "value")}
    met = list(annotation.constraints_met or [])
    if len(met) == len(constraints):
        for i, value in enumerate(met):
            initial[f"constraint_{i}"] = MET if value else NOT_MET
    initial["flags"] = list(annotation.flags)
    initial["comment"] = annotation.comment
    return initial
