"""annotation_submit stores once and enforces the rubric; annotation_update keeps history."""

import pytest
from django.core.exceptions import ValidationError

from annotator.models import Annotation, AnnotationRevision, Assignment, Item, Score
from annotator.rating.services.annotations import (
    SubmissionRefused,
    annotation_submit,
    annotation_update,
)
from annotator.rating.services.assignment import item_next_for_annotator
from tests.factories import make_batch, make_user

pytestmark = pytest.mark.django_db

GOOD = {"coherence": 5, "relevance": 4, "instruction_following": 5, "safety_compliance": 4, "fluency": 5}


@pytest.fixture
def leased():
    batch = make_batch(n_items=2)
    user = make_user("ann")
    return item_next_for_annotator(batch=batch, annotator=user)


def test_submit_stores_scores_flags_and_time_on_item(leased):
    result = annotation_submit(
        item=leased.item,
        annotator=leased.annotator,
        scores=GOOD,
        flags=["prompt_ambiguous"],
        comment="asks for the date",
        constraints_met=[True, True],
    )
    assert result.created
    annotation = Annotation.objects.get(pk=result.annotation.pk)  # as stored, not as returned
    assert annotation.started_at == result.annotation.started_at
    assert annotation.source == Annotation.Source.WEB and annotation.comment == "asks for the date"
    assert dict(annotation.scores.values_list("dimension", "value")) == GOOD
    assert annotation.flags == ["prompt_ambiguous"]
    assert annotation.constraints_met == [True, True]
    assert annotation.started_at == leased.leased_at
    assert annotation.seconds_on_item >= 0
    assert Assignment.objects.get(pk=leased.pk).state == Assignment.State.SUBMITTED
    item = Item.objects.get(pk=leased.item_id)
    assert (item.n_annotations, item.n_leased) == (1, 0)


def test_a_repeated_submit_stores_one_annotation(leased):
    first = annotation_submit(item=leased.item, annotator=leased.annotator, scores=GOOD)
    second = annotation_submit(item=leased.item, annotator=leased.annotator, scores={**GOOD, "fluency": 1})
    assert not second.created
    assert second.annotation.pk == first.annotation.pk
    assert Annotation.objects.count() == 1
    assert Score.objects.get(dimension="fluency").value == 5
    assert Item.objects.get(pk=leased.item_id).n_annotations == 1


def test_the_server_enforces_the_caps_and_saves_nothing(leased):
    with pytest.raises(ValidationError, match="at most 2"):
        annotation_submit(
            item=leased.item, annotator=leased.annotator, scores=GOOD, flags=["ignores_hard_constraint"]
        )
    assert Annotation.objects.count() == 0
    assert Assignment.objects.get(pk=leased.pk).state == Assignment.State.LEASED


def test_an_item_never_given_cannot_be_submitted(leased):
    stranger = make_user("stranger")
    with pytest.raises(SubmissionRefused, match="not given to you"):
        annotation_submit(item=leased.item, annotator=stranger, scores=GOOD)
    assert Annotation.objects.count() == 0


def test_update_keeps_the_old_values_as_history(leased):
    annotation = annotation_submit(
        item=leased.item, annotator=leased.annotator, scores=GOOD, comment="first"
    ).annotation
    annotation_update(
        annotation=annotation,
        changed_by=leased.annotator,
        scores={**GOOD, "instruction_following": 2},
        flags=["ignores_hard_constraint"],
        comment="second",
        constraints_met=[False, False],
    )
    annotation.refresh_from_db()
    assert annotation.comment == "second"
    assert annotation.flags == ["ignores_hard_constraint"]
    assert dict(annotation.scores.values_list("dimension", "value"))["instruction_following"] == 2
    revision = AnnotationRevision.objects.get()
    assert revision.changed_by == leased.annotator
    assert revision.old_scores == GOOD
    assert (revision.old_flags, revision.old_comment) == ([], "first")
    # Saving the same values again adds no revision.
    annotation_update(
        annotation=annotation,
        changed_by=leased.annotator,
        scores={**GOOD, "instruction_following": 2},
        flags=["ignores_hard_constraint"],
        comment="second",
        constraints_met=[False, False],
    )
    assert AnnotationRevision.objects.count() == 1
    assert Item.objects.get(pk=leased.item_id).n_annotations == 1


def test_update_enforces_the_caps(leased):
    annotation = annotation_submit(item=leased.item, annotator=leased.annotator, scores=GOOD).annotation
    with pytest.raises(ValidationError, match="within 2"):
        annotation_update(
            annotation=annotation, changed_by=leased.annotator, scores=GOOD, flags=["partial_compliance"]
        )
    assert AnnotationRevision.objects.count() == 0
