"""Issue 10, defect 2: a rubric on another scale is refused at import, naming the scale, through
every door; and an integrity error that is not the uniqueness race names what was wrong."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.db import IntegrityError, transaction
from django.urls import reverse

from annotator.models import Annotation, Batch, Score
from annotator.services.integrity import violated_constraint
from annotator.uploads.files.errors import ImportRefused
from annotator.uploads.selectors.plans import annotation_import_plan
from annotator.uploads.services.annotation_imports import annotations_import
from hcs.rubric import Rubric
from tests.factories import make_annotation, make_batch, make_user, upload_storage_at

pytestmark = pytest.mark.django_db

ITEMS = "item_id,prompt,response\ni1,p,r\ni2,p,r2\n"
ANNOTATIONS = "item_id,prompt,response,annotator,coherence\ni1,p,r,alice,7\ni2,p,r2,bob,0\n"
SCALE_MESSAGE = r"rates on a 0\u201310 scale; this app stores and reports scores on the 1\u20135 scale only"


def _zero_to_ten() -> dict:
    data = Rubric.default().to_dict()
    data["name"], data["title"] = "ten", "Ten-point rubric"
    data["scale"] = {"min": 0, "max": 10, "higher_is_better": True}
    for d in data["dimensions"]:
        d["levels"] = {str(v): f"level {v}" for v in range(11)}
    data["rules"] = [{**r, "min": 0, "max": min(r["max"], 10)} for r in data.get("rules", [])]
    Rubric.from_dict(data)  # a valid rubric for hcs, which computes on any scale
    return data


@pytest.fixture
def files(tmp_path):
    rubric = tmp_path / "ten.json"
    rubric.write_text(json.dumps(_zero_to_ten()))
    items = tmp_path / "items.csv"
    items.write_text(ITEMS)
    annotations = tmp_path / "annotations.csv"
    annotations.write_text(ANNOTATIONS)
    return rubric, items, annotations


def test_import_batch_refuses_a_rubric_on_another_scale_naming_it(files):
    rubric, items, _ = files
    with pytest.raises(CommandError, match=SCALE_MESSAGE):
        call_command("import_batch", str(items), "--name", "ten", "--rubric", str(rubric))
    assert not Batch.objects.exists()


def test_import_annotations_refuses_a_new_batch_on_another_scale_instead_of_a_misleading_race(files):
    rubric, _, annotations = files
    with pytest.raises(CommandError) as raised:
        call_command("import_annotations", str(annotations), "--batch", "ten", "--rubric", str(rubric))
    assert "0\u201310 scale" in str(raised.value)
    assert "changed while the file was being saved" not in str(raised.value)
    assert not Batch.objects.exists() and not Annotation.objects.exists()


def test_the_upload_preview_names_the_scale_and_offers_no_confirm(client, admin_user, settings, tmp_path):
    upload_storage_at(settings, tmp_path / "uploads")
    client.force_login(admin_user)
    response = client.post(
        reverse("upload_preview"),
        {
            "mode": "batch",
            "name": "ten",
            "k": "3",
            "file": SimpleUploadedFile("items.csv", ITEMS.encode(), content_type="text/csv"),
            "rubric_file": SimpleUploadedFile("ten.json", json.dumps(_zero_to_ten()).encode()),
        },
    )
    html = response.content.decode()
    assert "rates on a 0\u201310 scale" in html
    assert reverse("upload_confirm") not in html
    assert not Batch.objects.exists()


def test_the_default_scale_is_accepted(files):
    _, items, _ = files
    call_command("import_batch", str(items), "--name", "five")
    rubric = Batch.objects.get(name="five").rubric_obj
    assert (rubric.scale_min, rubric.scale_max) == (1, 5)


def test_an_integrity_error_other_than_the_race_names_the_constraint():
    """A score the database refuses is reported as such, not as 'the batch changed'."""
    make_batch("study", n_items=1)
    plan = annotation_import_plan(
        data=b"item_id,annotator,coherence\nstudy-0,alice,4\n", filename="a.csv", batch_name="study"
    )
    assert plan.ok
    plan.parsed.annotations[0].scores["coherence"] = 9  # past every check: only the database stops it
    with pytest.raises(ImportRefused) as raised:
        annotations_import(plan=plan)
    message = str(raised.value.errors[0])
    assert "changed while the file was being saved" not in message
    assert "a score lies outside 1\u20135 (constraint score_value_1_to_5)" in message
    assert not Score.objects.exists() and not Annotation.objects.exists()


def test_the_uniqueness_race_still_says_the_batch_changed():
    batch = make_batch("study", n_items=1)
    plan = annotation_import_plan(
        data=b"item_id,annotator,coherence\nstudy-0,alice,4\n", filename="a.csv", batch_name="study"
    )
    make_annotation(batch.items.get(), make_user("alice"), {"coherence": 3})  # the web, meanwhile
    with pytest.raises(ImportRefused, match="The batch changed while the file was being saved"):
        annotations_import(plan=plan)


def test_violated_constraint_names_unique_and_check_constraints():
    batch = make_batch("study", n_items=1)
    item, alice = batch.items.get(), make_user("alice")
    annotation = make_annotation(item, alice, {"coherence": 3})
    with pytest.raises(IntegrityError) as raised, transaction.atomic():
        make_annotation(item, alice, {"coherence": 3})
    assert violated_constraint(raised.value) == "annotation_one_per_item_annotator"
    with pytest.raises(IntegrityError) as raised, transaction.atomic():
        Score.objects.create(annotation=annotation, item=item, dimension="fluency", value=6)
    assert violated_constraint(raised.value) == "score_value_1_to_5"
