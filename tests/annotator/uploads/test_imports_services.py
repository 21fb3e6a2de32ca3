"""Saving imports: all or nothing, counters in step, users and items created as needed."""

import json

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from annotator.models import Annotation, Assignment, Batch, Item, Score
from annotator.rating.services.assignment import item_next_for_annotator
from annotator.uploads.files.batch_file import parse_batch_file
from annotator.uploads.files.errors import ImportRefused
from annotator.uploads.services.annotation_imports import annotations_import_file
from annotator.uploads.services.batches import batch_import, batch_import_file
from hcs.rubric import Rubric
from tests.factories import make_annotation, make_batch, make_user

pytestmark = pytest.mark.django_db

ITEMS = (
    "item_id,prompt,response,system_id,constraints,conversation,context,expected_output\n"
    'a1,Route avoiding tolls,Take Route 9,sys-a,avoid tolls;before 8AM,"[{""role"": ""user"", ""content"": ""hi""}]",ctx,exp\n'
    "a2,Route avoiding tolls,Take I-90,sys-b,avoid tolls,,,\n"
    "b1,Accessible museum route,Bus 14,sys-a,,,,\n"
)
DIMS = "coherence,relevance,instruction_following,safety_compliance,fluency"
ANN_HEADER = (
    f"item_id,system_id,prompt,response,annotator,{DIMS},ignores_hard_constraint,unsafe_suggestion,comment\n"
)


def counts() -> dict:
    return {
        "batches": Batch.objects.count(),
        "items": Item.objects.count(),
        "annotations": Annotation.objects.count(),
        "scores": Score.objects.count(),
        "users": get_user_model().objects.count(),
        "assignments": Assignment.objects.count(),
    }


def import_items(text: str = ITEMS, name: str = "b", k: int = 3, **kwargs) -> Batch:
    return batch_import_file(
        data=text.encode(), filename="items.csv", name=name, k=k, rubric=Rubric.default(), **kwargs
    )


def import_annotations(text: str, batch: str = "study", **kwargs):
    return annotations_import_file(data=text.encode(), filename="ann.csv", batch_name=batch, **kwargs)


# ---------------------------------------------------------------------------- batches


def test_batch_import_saves_every_field_in_file_order(admin_user):
    batch = import_items(created_by=admin_user)
    assert batch.k == 3 and batch.created_by == admin_user and batch.rubric == Rubric.default().to_dict()
    items = list(batch.items.order_by("position"))
    assert [i.item_id for i in items] == ["a1", "a2", "b1"]
    assert [i.position for i in items] == [0, 1, 2]
    first = items[0]
    assert first.constraints == ["avoid tolls", "before 8AM"]
    assert first.conversation == [{"role": "user", "content": "hi"}]
    assert (first.context, first.expected_output, first.system_id) == ("ctx", "exp", "sys-a")
    assert first.prompt_id == items[1].prompt_id != items[2].prompt_id
    assert all(i.n_annotations == 0 and i.n_leased == 0 and i.metadata == {} for i in items)


def test_a_file_with_one_bad_row_saves_nothing():
    before = counts()
    with pytest.raises(ImportRefused) as refused:
        import_items(ITEMS + "c1,A prompt,,sys-c,,,,\n")
    assert [str(e) for e in refused.value.errors] == ["row 5, column `response`: is empty"]
    assert counts() == before


def test_k_below_three_is_refused_and_saves_nothing():
    before = counts()
    with pytest.raises(ImportRefused, match=r"k = 2 is too small: each item needs at least 3"):
        import_items(k=2)
    assert counts() == before


def test_an_existing_batch_name_is_refused_and_saves_nothing():
    import_items(name="taken")
    before = counts()
    with pytest.raises(ImportRefused, match="A batch named “taken” already exists"):
        import_items(name=" taken ")
    assert counts() == before


def test_an_empty_batch_file_is_refused():
    with pytest.raises(ImportRefused, match="no items"):
        import_items("item_id,prompt,response\n")


def test_batch_import_with_another_rubric():
    data = Rubric.default().to_dict()
    data["name"], data["title"] = "other", "Other rubric"
    batch = batch_import(
        name="o",
        k=5,
        rubric=Rubric.from_dict(data),
        parsed=parse_batch_file(ITEMS.encode(), filename="x.csv"),
    )
    assert batch.rubric_obj.title == "Other rubric" and batch.k == 5


def test_unicode_and_tabs_and_newlines_survive_the_fast_insert():
    text = 'item_id,prompt,response\nu1,"Route to Zürich\tavoiding tolls","Line one\nLine two \\ backslash — 東京"\n'
    item = import_items(text).items.get()
    assert item.prompt == "Route to Zürich\tavoiding tolls"
    assert item.response == "Line one\nLine two \\ backslash — 東京"


def test_two_batches_may_share_item_ids():
    import_items(name="one")
    import_items(name="two")
    assert Item.objects.filter(item_id="a1").count() == 2


# ---------------------------------------------------------------------------- annotations

ANNOTATIONS = ANN_HEADER + (
    "r1,sys-a,Plan a route avoiding tolls in rain,Take Route 9 slowly,alice,5,5,5,5,5,0,0,good\n"
    "r1,sys-a,Plan a route avoiding tolls in rain,Take Route 9 slowly,bob,4,5,4,5,5,0,0,\n"
    "r2,sys-b,Plan a route avoiding tolls in rain,Take the expressway,alice,2,2,1,3,3,1,0,toll\n"
)


def test_annotations_import_creates_batch_items_users_and_scores():
    plan = import_annotations(ANNOTATIONS, k=4)
    batch = Batch.objects.get(name="study")
    assert batch.k == 4 and plan.new_items == ["r1", "r2"] and plan.new_users == ["alice", "bob"]
    r1, r2 = batch.items.order_by("position")
    assert (r1.item_id, r1.system_id, r1.response, r1.n_annotations) == (
        "r1",
        "sys-a",
        "Take Route 9 slowly",
        2,
    )
    assert r2.n_annotations == 1 and r1.prompt_id == r2.prompt_id
    annotations = list(Annotation.objects.order_by("id"))
    assert [(a.item.item_id, a.annotator.username) for a in annotations] == [
        ("r1", "alice"),
        ("r1", "bob"),
        ("r2", "alice"),
    ]
    assert {a.source for a in annotations} == {Annotation.Source.IMPORT}
    assert len({a.submitted_at for a in annotations}) == 1
    assert annotations[2].flags == ["ignores_hard_constraint"] and annotations[2].comment == "toll"
    scores = {(s.annotation_id, s.dimension): s.value for s in Score.objects.all()}
    assert scores[(annotations[2].pk, "instruction_following")] == 1
    assert Score.objects.count() == 15
    assert all(s.item_id == s.annotation.item_id for s in Score.objects.select_related("annotation"))
    alice = get_user_model().objects.get(username="alice")
    assert not alice.has_usable_password()
    assert list(alice.groups.values_list("name", flat=True)) == ["annotator"]


def test_imported_pairs_are_never_handed_out_again_on_the_rating_page():
    import_annotations(ANNOTATIONS)
    batch = Batch.objects.get(name="study")
    alice = get_user_model().objects.get(username="alice")
    assert Assignment.objects.filter(annotator=alice, state=Assignment.State.SUBMITTED).count() == 2
    assert item_next_for_annotator(batch=batch, annotator=alice) is None
    carol = make_user("carol")
    assert item_next_for_annotator(batch=batch, annotator=carol) is not None


def test_blank_scores_are_not_stored():
    import_annotations(ANN_HEADER + "r1,s,p,r,alice,5,,,,,0,0,\n")
    assert list(Score.objects.values_list("dimension", "value")) == [("coherence", 5)]


def test_existing_items_are_matched_by_item_id_and_counters_stay_in_step():
    batch = make_batch("study", n_items=2)
    item = batch.items.get(item_id="study-0")
    make_annotation(item, make_user("webrater"), {"coherence": 4})
    text = (
        ANN_HEADER + "study-0,,,,alice,5,5,5,5,5,,,\nnew-1,s,A new prompt,A new answer,alice,3,3,3,3,3,,,\n"
    )
    plan = import_annotations(text)
    assert plan.existing_items == {"study-0": item.pk} and plan.new_items == ["new-1"]
    item.refresh_from_db()
    assert item.n_annotations == 2
    new = Item.objects.get(batch=batch, item_id="new-1")
    assert new.position == 2 and new.n_annotations == 1 and new.prompt == "A new prompt"
    for it in batch.items.all():
        assert it.n_annotations == it.annotations.count()


def test_an_existing_annotation_refuses_the_whole_file():
    batch = make_batch("study", n_items=2)
    make_annotation(batch.items.get(item_id="study-1"), make_user("alice"), {"coherence": 4})
    before = counts()
    text = ANN_HEADER + "study-0,,,,alice,5,5,5,5,5,,,\nstudy-1,,,,alice,5,5,5,5,5,,,\n"
    with pytest.raises(ImportRefused) as refused:
        import_annotations(text)
    assert [str(e) for e in refused.value.errors] == [
        "row 3, column `annotator`: `alice` already has an annotation for item `study-1` in batch “study”"
    ]
    assert counts() == before


def test_a_live_lease_refuses_the_row():
    batch = make_batch("study", n_items=1)
    alice = make_user("alice")
    assert item_next_for_annotator(batch=batch, annotator=alice) is not None
    with pytest.raises(ImportRefused, match="is rating item `study-0` in the browser right now"):
        import_annotations(ANN_HEADER + "study-0,,,,alice,5,5,5,5,5,,,\n")


def test_text_that_differs_from_the_stored_item_is_refused():
    make_batch("study", n_items=1)
    with pytest.raises(
        ImportRefused, match=r"row 2, column `response`: differs from the stored response of item `study-0`"
    ):
        import_annotations(ANN_HEADER + "study-0,,,Another answer,alice,5,5,5,5,5,,,\n")


def test_a_new_item_needs_its_prompt_and_response():
    before = counts()
    with pytest.raises(ImportRefused) as refused:
        import_annotations(ANN_HEADER + "zz,s,,,alice,5,5,5,5,5,,,\n")
    assert [str(e).split(",")[:2] for e in refused.value.errors] == [
        ["row 2", " column `prompt`: is empty"],
        ["row 2", " column `response`: is empty"],
    ]
    assert counts() == before


@pytest.mark.parametrize(
    "row, expected",
    [
        ("r1,s,p,r,alice,5,5,5,5,6,0,0,", "row 3, column `fluency`: Fluency: 6 is outside 1–5."),
        (
            "r1,s,p,r,alice,5,5,4,5,5,1,0,",
            "row 3, column `instruction_following`: Instruction-Following is 4",
        ),
    ],
)
def test_bad_scores_save_nothing(row, expected):
    before = counts()
    with pytest.raises(ImportRefused) as refused:
        import_annotations(ANN_HEADER + "r0,s,p,r,bob,5,5,5,5,5,0,0,\n" + row + "\n")
    assert str(refused.value.errors[0]).startswith(expected)
    assert counts() == before


def test_duplicate_annotation_rows_save_nothing():
    before = counts()
    with pytest.raises(ImportRefused, match="already rated item `r1` on row 2"):
        import_annotations(ANN_HEADER + "r1,s,p,r,alice,5,5,5,5,5,0,0,\nr1,s,p,r,alice,4,4,4,4,4,0,0,\n")
    assert counts() == before


def test_k_below_three_for_a_new_batch_is_refused():
    before = counts()
    with pytest.raises(ImportRefused, match="k = 2 is too small"):
        import_annotations(ANNOTATIONS, k=2)
    assert counts() == before


def test_another_rubric_for_a_new_batch_and_a_mismatch_for_an_existing_one():
    data = Rubric.default().to_dict()
    data.update(name="two", title="Two dimensions", rules=[], flags=[], exclusive_flags=[])
    data["dimensions"] = [dict(data["dimensions"][0], weight=0.5), dict(data["dimensions"][4], weight=0.5)]
    rubric = Rubric.from_dict(data)
    import_annotations(
        "item_id,prompt,response,annotator,coherence,fluency\nx,p,r,alice,5,4\n", batch="two", rubric=rubric
    )
    assert Batch.objects.get(name="two").rubric_obj.title == "Two dimensions"
    # Later files for this batch are checked with its own rubric, so HCS columns are unknown there.
    with pytest.raises(ImportRefused, match="column `relevance`: is not a column"):
        import_annotations("item_id,annotator,coherence,relevance\nx,bob,5,4\n", batch="two")
    with pytest.raises(ImportRefused, match="uses the rubric “Two dimensions”"):
        import_annotations("item_id,annotator,coherence\nx,bob,5\n", batch="two", rubric=Rubric.default())


def test_existing_users_keep_their_password_and_roles(annotator_user):
    import_annotations(ANN_HEADER + f"r1,s,p,r,{annotator_user.username},5,5,5,5,5,0,0,\n")
    annotator_user.refresh_from_db()
    assert annotator_user.has_usable_password()
    assert Annotation.objects.get().annotator == annotator_user


def test_web_annotations_imported_timestamp_is_one_moment():
    before = timezone.now()
    import_annotations(ANNOTATIONS)
    stamps = set(Annotation.objects.values_list("submitted_at", flat=True))
    assert len(stamps) == 1 and before <= stamps.pop() <= timezone.now()


def test_json_fields_round_trip_for_new_items_from_annotation_files():
    text = (
        "item_id,prompt,response,annotator,coherence,constraints,conversation\n"
        'x,p,r,alice,5,"[""avoid tolls""]","[{""role"": ""user"", ""content"": ""hi""}]"\n'
    )
    import_annotations(text)
    item = Item.objects.get(item_id="x")
    assert item.constraints == ["avoid tolls"] and item.conversation == [{"role": "user", "content": "hi"}]
    assert json.dumps(item.metadata) == "{}"


def test_an_annotation_submitted_between_check_and_save_refuses_the_file():
    from annotator.uploads.selectors.plans import annotation_import_plan
    from annotator.uploads.services.annotation_imports import annotations_import

    batch = make_batch("study", n_items=2)
    alice = make_user("alice")
    text = ANN_HEADER + "study-0,,,,alice,5,5,5,5,5,,,\nstudy-1,,,,alice,5,5,5,5,5,,,\n"
    plan = annotation_import_plan(data=text.encode(), filename="a.csv", batch_name="study")
    assert plan.ok
    make_annotation(batch.items.get(item_id="study-1"), alice, {"coherence": 3})  # the web, meanwhile
    before = counts()
    with pytest.raises(ImportRefused, match="The batch changed while the file was being saved"):
        annotations_import(plan=plan)
    assert counts() == before


@pytest.mark.parametrize(
    ("name", "k", "data"),
    [
        ("taken", 3, ITEMS),  # a batch of that name exists
        ("fresh", 2, ITEMS),  # k below the minimum
        ("fresh", 3, "item_id,prompt,response\n"),  # no items
        ("", 3, "item_id,prompt,response\nx,,r\nx,p,r\n"),  # no name, an empty prompt, a repeated id
    ],
)
def test_batch_preview_and_save_refuse_with_the_same_errors(name, k, data):
    from annotator.uploads.selectors.plans import batch_upload_preview

    make_batch("taken")
    preview = batch_upload_preview(data=data.encode(), filename="f.csv", name=name, k=k, rubric=None)
    with pytest.raises(ImportRefused) as refused:
        batch_import_file(data=data.encode(), filename="f.csv", name=name, k=k, rubric=Rubric.default())
    assert preview.errors and preview.errors == refused.value.errors


@pytest.mark.parametrize(
    "data",
    [
        ANN_HEADER,  # no annotations
        ANN_HEADER + "a1,sys-a,p,r,ann1,9,4,4,4,4,0,0,\n",  # a score off the scale
    ],
)
def test_annotation_preview_and_save_refuse_with_the_same_errors(data):
    from annotator.uploads.selectors.plans import annotation_upload_preview

    preview = annotation_upload_preview(
        data=data.encode(), filename="f.csv", name="offline", k=None, rubric=None
    )
    with pytest.raises(ImportRefused) as refused:
        annotations_import_file(data=data.encode(), filename="f.csv", batch_name="offline")
    assert preview.errors and preview.errors == refused.value.errors
    assert not Batch.objects.filter(name="offline").exists()


def test_deleting_an_imported_item_deletes_its_scores():
    # Score.item has no database constraint (the annotation's keeps the item): the ORM's cascade must.
    import_annotations(ANNOTATIONS)
    item = Item.objects.get(item_id="r1")
    assert Score.objects.filter(item=item).count() == 10
    item.delete()
    assert not Score.objects.filter(item_id=item.pk).exists() and Score.objects.count() == 5
