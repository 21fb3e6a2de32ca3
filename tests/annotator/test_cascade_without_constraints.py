"""Scores and assignments have no foreign keys in the database (annotator/models/annotation.py and
assignment.py say why), so the ORM's cascade is what keeps them from outliving what they point at:
deleting an annotation, an item, a batch or a user leaves no score or assignment behind."""

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.utils import timezone

from annotator.models import Annotation, Assignment, Batch, Item, Score
from annotator.uploads.services.annotation_imports import annotations_import_file
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


def _orphan_assignments() -> int:
    assignment, item, user = (
        connection.ops.quote_name(m._meta.db_table) for m in (Assignment, Item, get_user_model())
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT COUNT(*) FROM {assignment} g LEFT JOIN {item} i ON i.id = g.item_id "
            f"LEFT JOIN {user} u ON u.id = g.annotator_id WHERE i.id IS NULL OR u.id IS NULL"
        )
        return cursor.fetchone()[0]


def _imported(batch_name: str) -> Batch:
    data = (
        "item_id,prompt,response,annotator,coherence,relevance,instruction_following,safety_compliance,fluency\n"
        + "".join(f"{batch_name}-{n},p,r,rater{a},4,3,5,5,4\n" for n in range(4) for a in range(3))
    ).encode()
    annotations_import_file(data=data, filename="a.csv", batch_name=batch_name)
    return Batch.objects.get(name=batch_name)


def _foreign_keys(model) -> set[tuple[str, ...]]:
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, model._meta.db_table)
    return {tuple(c["columns"]) for c in constraints.values() if c["foreign_key"]}


def test_the_database_no_longer_checks_scores_and_assignments():
    """The trade, pinned: if this fails, a constraint is back and the cascade tests below guard
    nothing new. An annotation's own keys stay checked."""
    assert _foreign_keys(Score) == set() and _foreign_keys(Assignment) == set()
    assert _foreign_keys(Annotation) == {("item_id",), ("annotator_id",)}


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


def test_deleting_an_item_a_batch_or_a_user_deletes_their_assignments():
    first, second = _imported("first"), _imported("second")
    assert Assignment.objects.count() == 2 * 4 * 3 and _orphan_assignments() == 0
    Item.objects.filter(batch=first).first().delete()
    assert Assignment.objects.filter(batch=first).count() == 3 * 3 and _orphan_assignments() == 0
    first.delete()
    assert not Assignment.objects.filter(batch_id=first.pk).exists() and _orphan_assignments() == 0
    # A user with annotations is protected; one who only holds assignments can go, and they go too.
    newcomer = make_user("newcomer")
    Assignment.objects.create(
        item=Item.objects.filter(batch=second).first(),
        annotator=newcomer,
        leased_at=timezone.now(),
        lease_expires_at=timezone.now(),
    )
    assert Assignment.objects.count() == 4 * 3 + 1
    newcomer.delete()
    assert Assignment.objects.count() == 4 * 3 and _orphan_assignments() == 0
    second.delete()
    assert Assignment.objects.count() == 0 and _orphan_assignments() == 0


def test_the_orphan_count_sees_an_orphan_assignment():
    batch = make_batch(n_items=1)
    item = Item.objects.get(batch=batch)
    Assignment.objects.create(
        item=item, annotator=make_user("ann"), leased_at=timezone.now(), lease_expires_at=timezone.now()
    )
    Item.objects.filter(pk=item.pk)._raw_delete(Item.objects.db)
    assert _orphan_assignments() == 1
