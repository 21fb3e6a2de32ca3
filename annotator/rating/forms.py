"""The rating form: scores per rubric dimension, the hard-constraint checklist, flags, comment.

Built from the batch's rubric data, so a second rubric needs no code. The checklist decides
the two constraint flags (``hcs.checklist``); the rubric's rules then decide which scores are
allowed, the same rules the page's JavaScript applies as the annotator ticks.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from django import forms
from django.template.loader import render_to_string

from hcs.checklist import CHECKLIST_FLAGS, IGNORES, checklist_flags
from hcs.rubric import Rubric

MET, NOT_MET = "met", "not_met"
# Keys the rating page already uses (i opens the instructions); a flag's shortcut is the first other
# letter of its label's words.
RESERVED_KEYS = frozenset("ynsrci")


def flag_shortcuts(labels: Sequence[str]) -> list[str]:
    """One letter per flag label, for the page's keyboard shortcuts: the first letter of a word (a
    one-letter word like "a" last), else any letter of the label, not used by another flag or the page."""
    taken, keys = set(RESERVED_KEYS), []
    for label in labels:
        words = [w.lower() for w in label.split() if w[:1].isalpha()]
        initials = [w[0] for w in words if len(w) > 1] + [w[0] for w in words if len(w) == 1]
        candidates = initials + [ch for ch in label.lower() if ch.isalpha()]
        key = next((ch for ch in candidates if ch not in taken and ch.isascii()), "")
        taken.add(key)
        keys.append(key)
    return keys


SCORES_TEMPLATE = "annotator/_score_rows.html"
_scores_cache: dict[tuple, str] = {}


def _manual_flags(rubric: Rubric, checklist: bool) -> list:
    """Flags the annotator ticks; the checklist sets the constraint flags when there is one."""
    if checklist:
        return [f for f in rubric.flags if f.key not in CHECKLIST_FLAGS]
    return list(rubric.flags)


def _rubric_fields(rubric: Rubric, checklist: bool) -> dict[str, forms.Field]:
    """A score field per rubric dimension and the flags field."""
    fields: dict[str, forms.Field] = {}
    for dim in rubric.dimensions:
        fields[f"score_{dim.key}"] = forms.TypedChoiceField(
            choices=[(v, str(v)) for v in rubric.levels],
            coerce=int,
            empty_value=None,
            required=False,  # the rubric check in RatingForm.clean says which one is missing, by name
            error_messages={
                "invalid_choice": (
                    f"{dim.label}: %(value)s is not a score on the "
                    f"{rubric.scale_min}\u2013{rubric.scale_max} scale."
                )
            },
        )
    fields["flags"] = forms.MultipleChoiceField(
        choices=[(f.key, f.label) for f in _manual_flags(rubric, checklist)],
        required=False,
        error_messages={"invalid_choice": "%(value)s is not a flag you can set here."},
    )
    return fields


_fields_cache: dict[tuple[str, bool], dict[str, forms.Field]] = {}


def _shared_rubric_fields(cache_key: str, rubric: Rubric, checklist: bool) -> dict[str, forms.Field]:
    """``_rubric_fields`` built once per rubric: building them (choice normalisation, error
    messages) cost more than validating a submission."""
    key = (cache_key, checklist)
    fields = _fields_cache.get(key)
    if fields is None:
        if len(_fields_cache) > 256:
            _fields_cache.clear()
        fields = _fields_cache[key] = _rubric_fields(rubric, checklist)
    return fields


@lru_cache(maxsize=2048)
def _constraint_field(text: str, *, required: bool = True) -> forms.ChoiceField:
    return forms.ChoiceField(
        choices=[(MET, "Met"), (NOT_MET, "Not met")],
        required=required,
        error_messages={
            "required": f"Say whether the hard constraint \u201c{text}\u201d is met.",
            "invalid_choice": f"Answer \u201c{text}\u201d with met or not met.",
        },
    )


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

    def __init__(
        self,
        *args,
        rubric: Rubric,
        constraints: Sequence[str] = (),
        cache_key: str = "",
        stored_checklist_flags: Sequence[str] | None = None,
        **kwargs,
    ):
        super().__init__(*args, **kwargs)
        self.rubric = rubric
        # Editing an annotation stored without per-constraint answers (an imported one): the
        # checklist may be left blank, and then its flags stay as stored.
        self.stored_checklist_flags = None if stored_checklist_flags is None else list(stored_checklist_flags)
        self.cache_key = cache_key  # names the rubric, for caching its fields and rendered score rows
        self.constraints = [str(c) for c in constraints]
        if cache_key:
            self.fields.update(_shared_rubric_fields(cache_key, rubric, bool(self.constraints)))
        else:
            self.fields.update(_rubric_fields(rubric, bool(self.constraints)))
        # The fields are shared between forms (built once per rubric and per constraint text):
        # nothing here or in Django's validation changes a field, so sharing is safe.
        for i, text in enumerate(self.constraints):
            self.fields[f"constraint_{i}"] = _constraint_field(
                text, required=self.stored_checklist_flags is None
            )
        self.fields["flags"] = self.fields.pop("flags")  # after the constraints, as the page lists them
        self.payload: dict[str, Any] = {}

    @property
    def manual_flags(self):
        """Flags the annotator ticks; the checklist sets the constraint flags when there is one."""
        return _manual_flags(self.rubric, bool(self.constraints))

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
            elif self.stored_checklist_flags is not None and not any(answers):
                flags += self.stored_checklist_flags
                met = []
            elif self.stored_checklist_flags is not None:
                self.add_error(
                    None, "Answer every hard constraint, or leave them all blank to keep the stored flags."
                )
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
                {
                    "index": i,
                    "name": bound.html_name,
                    "text": text,
                    "value": bound.value() or "",
                    "errors": bound.errors,
                }
            )
        return rows

    def flag_rows(self) -> list[dict[str, Any]]:
        if getattr(self, "_flag_rows", None) is None:  # the page lists them three times
            self._flag_rows = self._build_flag_rows()
        return self._flag_rows

    def _build_flag_rows(self) -> list[dict[str, Any]]:
        chosen = set(self["flags"].value() or [])
        # Keys from every flag of the rubric, so a flag keeps its key on items with and without a checklist.
        shortcuts = dict(
            zip(self.rubric.flag_keys, flag_shortcuts([f.label for f in self.rubric.flags]), strict=True)
        )
        return [
            {
                "key": f.key,
                "label": f.label,
                "description": f.description,
                "checked": f.key in chosen,
                "shortcut": shortcuts[f.key],
            }
            for f in self.manual_flags
        ]

    def stored_checklist_labels(self) -> list[str]:
        labels = {f.key: f.label for f in self.rubric.flags}
        return [labels.get(key, key) for key in self.stored_checklist_flags or ()]

    def rubric_client_data(self) -> dict[str, Any]:
        """What rate.js needs to apply the caps live: the rules as ``hcs.rubric`` gives them."""
        return {
            "scale": [self.rubric.scale_min, self.rubric.scale_max],
            "rules": self.rubric.rules_data(),
            "flags": {f.key: f.label for f in self.rubric.flags},
            "checklist_flags": sorted(CHECKLIST_FLAGS & set(self.rubric.flag_keys)),
            "stored_checklist_flags": self.stored_checklist_flags,
        }


def stored_checklist_flags(annotation, constraints: Sequence[str]) -> list[str] | None:
    """The checklist flags to keep when an annotation has no per-constraint answers to show
    (imported ones); None when its answers are stored, or the item lists no constraints."""
    if not constraints or len(annotation.constraints_met or []) == len(constraints):
        return None
    return [f for f in annotation.flags if f in CHECKLIST_FLAGS]


def initial_from_annotation(annotation, constraints: Sequence[str]) -> dict[str, Any]:
    """The form as the annotation was stored. Without stored per-constraint answers, "ignores a
    hard constraint" still says every answer: none was met."""
    initial: dict[str, Any] = {
        f"score_{d}": v for d, v in annotation.scores.values_list("dimension", "value")
    }
    met = list(annotation.constraints_met or [])
    if constraints and len(met) != len(constraints) and IGNORES in annotation.flags:
        met = [False] * len(constraints)
    if len(met) == len(constraints):
        for i, value in enumerate(met):
            initial[f"constraint_{i}"] = MET if value else NOT_MET
    initial["flags"] = list(annotation.flags)
    initial["comment"] = annotation.comment
    return initial
