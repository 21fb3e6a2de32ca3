"""Database constraints hold even when code forgets to check."""

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotator.models import Annotation, Batch, Item, Score
from hcs.rubric import Rubric

pytestmark = pytest.mark.django_db


@pytest.fixture
def item(django_user_model):
    batch = Batch.objects.create(name="b", rubric=Rubric.default().to_dict(), k=3)
    return Item.objects.create(batch=batch, item_id="1", prompt="p", response="r")


def test_k_below_three_is_refused_by_the_database():
    with pytest.raises(IntegrityError), transaction.atomic():
        Batch.objects.create(name="small", rubric=Rubric.default().to_dict(), k=2)


def test_score_outside_one_to_five_is_refused(item, django_user_model):
    user = django_user_model.objects.create_user("ann")
    annotation = Annotation.objects.create(item=item, annotator=user, submitted_at=timezone.now())
    for bad in (0, 6):
        with pytest.raises(IntegrityError), transaction.atomic():
            Score.objects.create(annotation=annotation, item=item, dimension="fluency", value=bad)
    Score.objects.create(annotation=annotation, item=item, dimension="fluency", value=5)
    with pytest.raises(IntegrityError), transaction.atomic():
        Score.objects.create(annotation=annotation, item=item, dimension="fluency", value=4)


def test_one_annotation_per_item_and_annotator(item, django_user_model):
    user = django_user_model.objects.create_user("ann")
    Annotation.objects.create(item=item, annotator=user, submitted_at=timezone.now())
    with pytest.raises(IntegrityError), transaction.atomic():
        Annotation.objects.create(item=item, annotator=user, submitted_at=timezone.now())


def test_item_id_unique_within_batch_only(item):
    other = Batch.objects.create(name="other", rubric=Rubric.default().to_dict(), k=3)
    Item.objects.create(batch=other, item_id=item.item_id, prompt="p", response="r")
    with pytest.raises(IntegrityError), transaction.atomic():
        Item.objects.create(batch=item.batch, item_id=item.item_id, prompt="p", response="r")


def test_batch_rubric_is_a_rubric(item):
    assert item.batch.rubric_obj == Rubric.default()


def test_an_assignment_takes_its_items_batch_and_the_admin_cannot_set_another(item, django_user_model):
    from django.contrib import admin
    from django.test import RequestFactory

    from annotator.models import Assignment

    user = django_user_model.objects.create_user("leaseholder")
    now = timezone.now()
    assignment = Assignment.objects.create(item=item, annotator=user, leased_at=now, lease_expires_at=now)
    assert assignment.batch_id == item.batch_id
    request = RequestFactory().get("/")
    request.user = django_user_model.objects.create_superuser("root-admin", password="x")
    form = admin.site._registry[Assignment].get_form(request)
    assert "item" in form.base_fields and "batch" not in form.base_fields
