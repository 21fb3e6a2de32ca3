"""Scores have no foreign keys in the database (annotator/models/annotation.py says why), so the
ORM's cascade is what keeps them from outliving their annotation: deleting an annotation, an item
or a batch, or editing an annotation, leaves no score behind."""

import pytest
from django.db import connection

from annotator.models import Annotation, Batch, Item, Score
from annotator.services.annotation_imports import annotations_import_file
from tests.factories import make_annotation, make_batch, make_user

pytestmark = pytest.mark.django_db

SCORES = {"coherence": 4, "relevance": 3, "instruction_following": 5, "safety_compliance": 5, "fluency": 4}


def _orphans() -> int:
    """Score rows whose annotation or item is gone, counted in SQL (the ORM would hide nothing, but
    a join written out leaves no doubt about what is counted)."""
    score, annotation, item = (connection.ops.quote_name(m._meta.db_table) for m in (Score, Annotation, Item))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT COUNT(*) FROM {score} s LEFT JOIN {annotation} a ON a.id = s.annotation_id "
            f"LEFT JOIN {item} i ON i.id = s.item_id WHERE a.id IS NULL OR i.id IS NULL"
        )
        return cursor.fetchone()[0]


def _imported(batch_name: str) -> Batch:
    data = (
        "item_id,prompt,response,annotator,coherence,relevance,instruction_following,safety_compliance,fluency\n"
        + "".join(f"{batch_name}-{n},p,r,rater{a},4,3,5,5,4\n" for n in range(4) for a in range(3))
    ).encode()
    annotations_import_file(data=data, filename="a.csv", batch_name=batch_name)
    return Batch.objects.get(name=batch_name)


def test_the_database_no_longer_checks_a_scores_annotation():
    """The trade, pinned: if this fails, the constraint is back and the cascade tests below guard
    nothing new."""
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, Score._meta.db_table)
    keys = {tuple(c["columns"]) for c in constraints.values() if c["foreign_key"]}
    assert ("annotation_id",) not in keys and ("item_id",) not in keys


def test_deleting_an_annotation_deletes_its_scores():
    batch = _imported("one")
    kept = make_annotation(Item.objects.filter(batch=batch).first(), make_user("web"), SCORES)
    gone = Annotation.objects.filter(item__batch=batch, source=Annotation.Source.IMPORT).first()
    assert Score.objects.filter(annotation=gone).count() == 5
    gone.delete()
    assert not Score.objects.filter(annotation_id=gone.pk).exists()
    assert Score.objects.filter(annotation=kept).count() == 5
    assert Score.objects.count() == 5 * Annotation.objects.count() and _orphans() == 0


def test_deleting_a_querysets_annotations_deletes_their_scores():
    batch = _imported("many")
    Annotation.objects.filter(item__batch=batch, annotator__username="rater1").delete()
    assert Annotation.objects.count() == 8
    assert Score.objects.count() == 40 and _orphans() == 0


def test_deleting_an_item_or_a_batch_deletes_their_scores():
    first, second = _imported("first"), _imported("second")
    assert Score.objects.count() == 2 * 4 * 3 * 5
    Item.objects.filter(batch=first).first().delete()
    assert Score.objects.filter(item__batch=first).count() == 3 * 3 * 5 and _orphans() == 0
    first.delete()
    assert not Score.objects.filter(item__batch_id=first.pk).exists()
    assert Score.objects.count() == 4 * 3 * 5 and _orphans() == 0
    second.delete()
    assert Score.objects.count() == 0 and _orphans() == 0


def test_the_orphan_count_sees_an_orphan():
    """_orphans() can fail: a score written past the ORM for an annotation that is gone counts."""
    batch = make_batch(n_items=1)
    annotation = make_annotation(Item.objects.get(batch=batch), make_user("ann"), SCORES)
    Annotation.objects.filter(pk=annotation.pk)._raw_delete(Annotation.objects.db)
    assert _orphans() == 5
