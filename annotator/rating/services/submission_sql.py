"""The common submission on PostgreSQL, one statement written by hand: the annotator holds the lease.

``submit_leased`` turns the annotator's lease on the item into a submission, inserts the
annotation and its scores and moves the item's counters in one statement (the ``UPDATE`` of the
lease row takes its row lock, so a second submission of the same lease, from another tab, waits
and then finds it no longer leased). It returns None when the annotator holds no lease on the
item (submitted already, skipped, released, never given): the caller then takes the ORM path,
which tells these cases apart and is the only path on SQLite.

Lock order, as every writer: the user row (key share), the lease row, then the item row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from django.contrib.auth import get_user_model
from django.db import connection

from annotator.db_rows import instance_from_row
from annotator.hot_sql import hot_cursor
from annotator.models import Annotation, Assignment, Item, Score

_ANNOTATION_FIELDS = [f for f in Annotation._meta.concrete_fields if not f.primary_key]
_RETURNED = ", ".join(f.column for f in Annotation._meta.concrete_fields)


def _prep(field_name: str, value):
    return Annotation._meta.get_field(field_name).get_db_prep_save(value, connection)


def _tables() -> dict[str, str]:
    qn = connection.ops.quote_name
    return {
        name: qn(model._meta.db_table)
        for name, model in (
            ("assignment", Assignment),
            ("annotation", Annotation),
            ("score", Score),
            ("item", Item),
            ("user", get_user_model()),
        )
    }


def submit_leased(
    *,
    item_id: int,
    annotator_id: int,
    scores: Mapping[str, int],
    flags: Sequence[str],
    comment: str,
    constraints_met: Sequence[bool],
    now: datetime,
) -> Annotation | None:
    t = _tables()
    when = connection.ops.adapt_datetimefield_value(now)
    values = {
        "item_id": item_id,
        "annotator_id": annotator_id,
        "flags": _prep("flags", list(flags)),
        "comment": comment,
        "constraints_met": _prep("constraints_met", [bool(m) for m in constraints_met]),
        "source": Annotation.Source.WEB,
        "submitted_at": when,
        "updated_at": when,
    }
    columns = ", ".join(f.column for f in _ANNOTATION_FIELDS)
    take = (
        f"UPDATE {t['assignment']} SET state = %s, finished_at = %s"
        " WHERE item_id = %s AND annotator_id = %s AND state = %s"
    )
    take_params = [Assignment.State.SUBMITTED, when, item_id, annotator_id, Assignment.State.LEASED]
    score_rows = [(key, int(value)) for key, value in scores.items()]
    if not score_rows:
        return None  # the general path stores an annotation without scores
    count = f"UPDATE {t['item']} SET n_annotations = n_annotations + 1, n_leased = n_leased - 1 WHERE id = %s"
    # started_at comes from the lease row the first CTE updated.
    placeholders = ", ".join(
        "taken.leased_at" if f.attname == "started_at" else "%s" for f in _ANNOTATION_FIELDS
    )
    params = [*take_params, *(values[f.attname] for f in _ANNOTATION_FIELDS if f.attname != "started_at")]
    score_values = ", ".join("(%s::text, %s::integer)" for _ in score_rows)
    # The user row first (key share, as :func:`lock_annotator`): the lease row's UPDATE waits on
    # it, so an exclusion holding it is waited for and the lease it released fails the re-check.
    with hot_cursor() as cursor:
        cursor.execute(
            f"WITH locked AS (SELECT id FROM {t['user']} WHERE id = %s FOR KEY SHARE),"
            f" taken AS ({take} AND EXISTS (SELECT 1 FROM locked) RETURNING leased_at),"
            f" annotation AS (INSERT INTO {t['annotation']} ({columns}) SELECT {placeholders} FROM taken"
            f" RETURNING {_RETURNED}),"
            f" scores AS (INSERT INTO {t['score']} (annotation_id, item_id, dimension, value)"
            f" SELECT annotation.id, %s, v.dimension, v.value FROM annotation,"
            f" (VALUES {score_values}) AS v (dimension, value)),"
            f" counted AS ({count} AND EXISTS (SELECT 1 FROM taken))"
            " SELECT * FROM annotation",
            [annotator_id, *params, item_id, *(x for row in score_rows for x in row), item_id],
        )
        row = cursor.fetchone()
    return None if row is None else instance_from_row(Annotation, row)
