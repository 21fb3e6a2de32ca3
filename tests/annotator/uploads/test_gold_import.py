"""Gold items in the batch file: checked like annotations, named by row, kept out of the items."""

import pytest

from annotator.models import GoldItem, Item, QualityRule
from annotator.uploads.files.batch_file import parse_batch_file
from annotator.uploads.files.errors import ImportRefused
from annotator.uploads.services.batches import batch_import_file
from hcs.rubric import Rubric

DIMS = "gold_coherence,gold_relevance,gold_instruction_following,gold_safety_compliance,gold_fluency"
HEADER = f"item_id,prompt,response,{DIMS},gold_flags,gold_tolerance,gold_explanation,gold_kind\n"


def parse(text):
    return parse_batch_file(text.encode(), filename="items.csv", rubric=Rubric.default())


def messages(parsed):
    return [str(e) for e in parsed.errors]


GOOD = HEADER + (
    "a1,Route to the airport,Take Route 9,,,,,,,,,\n"
    "t1,Route avoiding tolls,Take the toll road,2,2,1,4,4,ignores_hard_constraint,,Uses a toll road.,training\n"
    "c1,This is a check,Give every dimension 2,2,2,2,2,2,,0,Instructed response.,check\n"
    "a2,Route to the museum,Bus 14,,,,,,,,,\n"
)


def test_gold_rows_leave_the_items_and_keep_the_expert_answer():
    parsed = parse(GOOD)
    assert parsed.ok, messages(parsed)
    assert list(parsed.rows["item_id"]) == ["a1", "a2"]
    assert list(parsed.rows["position"]) == [0, 1]
    assert [(g.kind, g.tolerance) for g in parsed.gold] == [("training", 1), ("check", 0)]
    training = parsed.gold[0]
    assert training.scores == {
        "coherence": 2,
        "relevance": 2,
        "instruction_following": 1,
        "safety_compliance": 4,
        "fluency": 4,
    }
    assert training.flags == ["ignores_hard_constraint"] and parsed.gold[1].flags == []
    assert parsed.gold_counts == {"training": 1, "check": 1}
    assert "gold_kind" not in parsed.extra_columns


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        (
            "g,p,r,2,2,6,2,2,,,,check",
            "row 2, column `gold_instruction_following`: 6 is not a whole number 1\u20135",
        ),
        ("g,p,r,2,2,,2,2,,,,check", "row 2, column `gold_instruction_following`: is empty"),
        ("g,p,r,2,2,2,2,2,,,,sometimes", "row 2, column `gold_kind`: `sometimes` is not a gold kind"),
        ("g,p,r,2,2,2,2,2,,9,,check", "row 2, column `gold_tolerance`: 9 is not a whole number 0\u20134"),
        (
            "g,p,r,2,2,2,2,2,no_such_flag,,,check",
            "row 2, column `gold_flags`: gold answer: 'no_such_flag' is not a flag",
        ),
        # the cap: with ignores_hard_constraint, Instruction-Following is at most 2; the score's column
        # is named, so the preview's Key column says which cell to fix
        (
            "g,p,r,2,2,4,2,2,ignores_hard_constraint,,,check",
            "row 2, column `gold_instruction_following`: gold answer: Instruction-Following is 4",
        ),
        (
            "g,p,r,2,2,2,2,2,partial_compliance;ignores_hard_constraint,,,check",
            "row 2, column `gold_flags`: gold answer: Ignores a hard constraint and Partial",
        ),
        (
            "g,p,r,,,,,,,,an explanation,",
            "row 2, column `gold_explanation`: is set, but the row has no gold scores",
        ),
    ],
)
def test_bad_gold_cells_are_named_by_row_and_column(row, expected):
    parsed = parse(HEADER + row + "\n")
    assert any(m.startswith(expected) for m in messages(parsed)), messages(parsed)


def test_an_unknown_gold_column_is_refused():
    parsed = parse("item_id,prompt,response,gold_clarity\na,p,r,3\n")
    assert any("`gold_clarity`: is not a gold column" in m for m in messages(parsed)), messages(parsed)


@pytest.mark.django_db
def test_import_stores_gold_apart_and_sets_the_training_rule():
    batch = batch_import_file(
        data=GOOD.encode(), filename="items.csv", name="with gold", k=3, rubric=Rubric.default()
    )
    assert list(Item.objects.filter(batch=batch).values_list("item_id", flat=True)) == ["a1", "a2"]
    gold = {g.item_id: g for g in GoldItem.objects.filter(batch=batch)}
    assert set(gold) == {"t1", "c1"}
    assert gold["t1"].explanation == "Uses a toll road." and gold["t1"].prompt == "Route avoiding tolls"
    assert QualityRule.objects.get(batch=batch).training_items == 1


@pytest.mark.django_db
def test_a_bad_gold_row_saves_nothing():
    bad = GOOD.replace(
        "c1,This is a check,Give every dimension 2,2,2,2,2,2", "c1,This is a check,x,2,2,2,2,7"
    )
    with pytest.raises(ImportRefused, match="row 4, column `gold_fluency`: 7"):
        batch_import_file(
            data=bad.encode(), filename="items.csv", name="bad gold", k=3, rubric=Rubric.default()
        )
    assert not Item.objects.exists() and not GoldItem.objects.exists()


@pytest.mark.django_db
def test_the_upload_preview_counts_items_to_rate_apart_from_gold_rows():
    """The preview's item count agrees with its systems' counts and with what the saved batch has."""
    from annotator.uploads.selectors.plans import batch_upload_preview

    preview = batch_upload_preview(
        data=GOOD.encode(), filename="items.csv", name="gold-preview", k=3, rubric=None
    )
    facts = dict(preview.facts)
    assert facts["Items"] == "2 to rate"
    assert facts["Gold items (not rated for agreement)"] == "1 training, 1 check"
    plain_file = (HEADER + "a1,Route,Take Route 9,,,,,,,,,\n").encode()
    plain = batch_upload_preview(data=plain_file, filename="items.csv", name="plain", k=3, rubric=None)
    assert dict(plain.facts)["Items"] == "1"


@pytest.mark.django_db
def test_a_gold_row_with_a_bad_cell_is_still_counted_as_gold_in_the_preview():
    """Row 4 is a check gold row whose coherence is 7: refused, and still not an item to rate."""
    from annotator.uploads.selectors.plans import batch_upload_preview

    bad = GOOD.replace(
        "c1,This is a check,Give every dimension 2,2,", "c1,This is a check,Give every dimension 2,7,"
    )
    preview = batch_upload_preview(data=bad.encode(), filename="items.csv", name="bad-gold", k=3, rubric=None)
    facts = dict(preview.facts)
    assert not preview.ok
    assert [str(e) for e in preview.errors] == [
        "row 4, column `gold_coherence`: 7 is not a whole number 1\u20135"
    ]
    assert facts["Items"] == "2 to rate" and facts["Systems"] == "(none) (2)"
    assert facts["Gold items (not rated for agreement)"] == "1 training, 1 check"
    assert [row[0] for row in preview.rows] == ["a1", "a2"]  # "First rows" lists items, not the gold row


@pytest.mark.django_db
def test_a_misspelled_gold_kind_is_counted_as_gold_of_an_unknown_kind():
    from annotator.uploads.selectors.plans import batch_upload_preview

    bad = GOOD.replace(",Instructed response.,check", ",Instructed response.,chek")
    preview = batch_upload_preview(data=bad.encode(), filename="items.csv", name="bad-kind", k=3, rubric=None)
    facts = dict(preview.facts)
    assert facts["Items"] == "2 to rate"
    assert facts["Gold items (not rated for agreement)"] == "1 training, 0 check, 1 of an unknown kind"
