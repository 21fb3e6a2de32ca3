"""A submission on PostgreSQL in one statement (the hot path of every rating round trip).

The lease becomes a submission, the annotation and its scores are inserted and the item's
counters move, all in one statement with data-modifying CTEs; if the annotator holds no live
lease on the item nothing is written and the caller takes the general path. SQLite, which
has no data-modifying CTEs, always takes the general path.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime

from django.db import connection

from annotator.models import Annotation, Assignment, Item, Score


def available() -> bool:
    return connection.vendor == "postgresql"


def submit_leased(
    *,
    item: Item,
    annotator,
    scores: Mapping[str, int],
    flags: Sequence[str],
    comment: str,
    constraints_met: Sequence[bool],
    now: datetime,
) -> Annotation | None:
    qn = connection.ops.quote_name
    assignment_t, annotation_t = qn(Assignment._meta.db_table), qn(Annotation._meta.db_table)
    score_t, item_t = qn(Score._meta.db_table), qn(Item._meta.db_table)
    pairs = [(str(key), int(value)) for key, value in scores.items()]
    values = ", ".join(["(%s, %s::integer)"] * len(pairs))
    sql = (
        f"WITH lease AS (UPDATE {assignment_t} SET state = %s, finished_at = %s"
        " WHERE item_id = %s AND annotator_id = %s AND state = %s RETURNING leased_at),"
        f" annotation AS (INSERT INTO {annotation_t}"
        " (item_id, annotator_id, flags, comment, constraints_met, source, started_at, submitted_at, updated_at)"
        " SELECT %s, %s, %s::jsonb, %s, %s::jsonb, %s, lease.leased_at, %s, %s FROM lease"
        " RETURNING id, started_at),"
        f" scores AS (INSERT INTO {score_t} (annotation_id, item_id, dimension, value)"
        f" SELECT annotation.id, %s, v.dimension, v.value FROM annotation, (VALUES {values}) AS v(dimension, value)),"
        f" counters AS (UPDATE {item_t} SET n_annotations = n_annotations + 1, n_leased = n_leased - 1"
        " WHERE id = %s AND EXISTS (SELECT 1 FROM lease))"
        " SELECT id, started_at FROM annotation"
    )
    params = [
        Assignment.State.SUBMITTED, now, item.pk, annotator.pk, Assignment.State.LEASED,
        item.pk, annotator.pk, json.dumps(list(flags)), comment, json.dumps([bool(m) for m in constraints_met]),
        Annotation.Source.WEB, now, now,
        item.pk, *[part for pair in pairs for part in pair],
        item.pk,
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    annotation = Annotation(
        id=row[0], item=item, annotator=annotator, flags=list(flags), comment=comment,
        constraints_met=[bool(m) for m in constraints_met], source=Annotation.Source.WEB,
        started_at=row[1], submitted_at=now, updated_at=now,
    )
    annotation._state.adding = False
    annotation._state.db = connection.alias
    return annotation
