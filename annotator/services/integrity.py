"""Which database constraint an ``IntegrityError`` broke, by name, on PostgreSQL and SQLite.

Services catch the one constraint they mean (a uniqueness race they can explain) and let every
other violation be reported for what it is, instead of one catch-all message.
"""

from __future__ import annotations

import re

from django.apps import apps
from django.db import IntegrityError, models

from annotator.models.annotation import SCORE_MAX, SCORE_MIN

# What a broken constraint means, for the constraints a file or form could break.
DESCRIPTIONS = {
    "score_value_1_to_5": f"a score lies outside {SCORE_MIN}\u2013{SCORE_MAX}",
    "annotation_one_per_item_annotator": "an annotator already has an annotation of one of these items",
    "assignment_once_per_item_annotator": "an annotator was already given one of these items",
    "judgescore_raw_within_scale": "a judge score lies outside its declared scale",
    "judgescore_one_per_dimension": "a judge has two scores for one item and dimension",
}
_SQLITE_CHECK = re.compile(r"CHECK constraint failed: (\w+)")
_SQLITE_UNIQUE = re.compile(r"UNIQUE constraint failed: ([\w., ]+)")


def _unique_constraint_named_by_columns(columns: set[str]) -> str | None:
    """SQLite names the columns of a broken unique constraint, not the constraint: find it."""
    for model in apps.get_app_config("annotator").get_models():
        table = model._meta.db_table
        for constraint in model._meta.constraints:
            if isinstance(constraint, models.UniqueConstraint) and constraint.fields:
                cols = {f"{table}.{model._meta.get_field(f).column}" for f in constraint.fields}
                if cols == columns:
                    return constraint.name
    return None


def violated_constraint(exc: IntegrityError) -> str | None:
    """The name of the constraint ``exc`` reports, or ``None`` when the database does not say."""
    diag = getattr(exc.__cause__, "diag", None)  # psycopg
    name = getattr(diag, "constraint_name", None)
    if name:
        return name
    message = str(exc)
    if match := _SQLITE_CHECK.search(message):
        return match.group(1)
    if match := _SQLITE_UNIQUE.search(message):
        return _unique_constraint_named_by_columns({c.strip() for c in match.group(1).split(",")})
    return None


def integrity_message(exc: IntegrityError, meanings: dict[str, str]) -> str:
    """What was wrong, for a person: the meaning of the named constraint, else the database's words."""
    name = violated_constraint(exc)
    if name in meanings:
        return meanings[name]
    if name:
        detail = f"{DESCRIPTIONS[name]} (constraint {name})" if name in DESCRIPTIONS else f"constraint {name}"
    else:
        detail = (str(exc).strip().splitlines() or ["no detail given"])[0][:300]
    return f"The database refused the data ({detail}); nothing was saved."
