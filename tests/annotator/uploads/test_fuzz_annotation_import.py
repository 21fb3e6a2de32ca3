"""Fuzzed offline-annotation files through the import service: every file either saves all its
annotations (with their items, accounts and scores) or is refused with errors and changes no row."""

import pytest
from django.contrib.auth import get_user_model
from django.test import override_settings
from hypothesis import event, given
from hypothesis import strategies as st

from annotator.models import (
    Annotation,
    AnnotationRevision,
    Assignment,
    Batch,
    Item,
    Score,
)
from annotator.uploads.files.errors import FileRefused, ImportRefused
from annotator.uploads.services.annotation_imports import annotations_import_file
from tests.annotator.fuzz_support import (
    FORMULAS,
    FUZZ,
    record,
    rolled_back,
    row_counts,
    upload_files,
)
from tests.factories import make_annotation, make_batch, make_user

pytestmark = pytest.mark.django_db

DIMENSIONS = ["coherence", "relevance", "instruction_following", "safety_compliance", "fluency"]
FLAGS = ["ignores_hard_constraint", "major_factual_impossibility", "unsafe_suggestion", "partial_compliance"]
COLUMNS = [
    "item_id",
    "annotator",
    *DIMENSIONS,
    "system_id",
    "prompt",
    "response",
    *FLAGS,
    "comment",
    "prompt_id",
    "context",
    "expected_output",
    "constraints",
    "conversation",
]
SCORES = ["1", "2", "3", "4", "5"] * 6 + ["", "0", "6", "3.0", "3.5", " 4 ", "-1", "1e3", "٣", "=1+1", "x"]
GOOD_CELLS = {
    "item_id": ["old-0", "old-1", "old-2", "new-1", "new-2", "new-3", "new-4", "new-5", "x" * 201],
    "annotator": [
        "ann-a",
        "ann-b",
        "ann-c",
        "ann-d",
        "ann-e",
        "ann-f",
        "old-rater",
        "Ann A",
        "a" * 151,
        "<b>x</b>",
        "",
    ],
    **{d: SCORES for d in DIMENSIONS},
    **{f: ["", "0", "0", "", "1", "yes", "no", "maybe", "2"] for f in FLAGS},
    "prompt": [
        "Plan a route avoiding tolls.",
        "Plan a route to the airport number 0 avoiding tolls.",
        *FORMULAS,
    ],
    "response": ["Take the coastal road (answer 0).", "Take Route 9.", "<img src=x onerror=alert(1)>"],
    "system_id": ["sys-a", "sys-b", "s" * 201],
    "comment": ["fine", '=HYPERLINK("http://x")', "<script>alert(1)</script>", "c" * 6000],
}
MODELS = (Batch, Item, Annotation, Score, AnnotationRevision, Assignment, get_user_model())


@pytest.fixture
def existing(db):
    batch = make_batch("old", n_items=3)
    rater = make_user("old-rater")
    make_annotation(batch.items.get(item_id="old-0"), rater, {"coherence": 4})
    return batch


@FUZZ
@given(
    file=upload_files(COLUMNS, GOOD_CELLS, required=3),
    batch_name=st.sampled_from(["old", "old", "new batch", "new batch", "", "b" * 201]),
    k=st.sampled_from([None, None, 3, 2]),
    max_bytes=st.sampled_from([50 * 1024 * 1024, 50 * 1024 * 1024, 300]),
)
def test_any_annotation_file_imports_whole_or_not_at_all(existing, file, batch_name, k, max_bytes):
    record("annotation importer")
    data, filename = file
    with rolled_back(), override_settings(ANNOTATOR_UPLOAD_MAX_BYTES=max_bytes):
        before = row_counts(*MODELS)
        try:
            plan = annotations_import_file(data=data, filename=filename, batch_name=batch_name, k=k)
        except FileRefused as exc:
            event("file refused")
            assert str(exc)
            assert row_counts(*MODELS) == before
        except ImportRefused as exc:
            event("rows refused")
            assert exc.errors and all(str(e) for e in exc.errors)
            assert row_counts(*MODELS) == before
        else:
            event("imported")
            after = row_counts(*MODELS)
            n = len(plan.parsed.annotations)
            assert n > 0
            assert after["Annotation"] == before["Annotation"] + n
            assert after["Item"] == before["Item"] + len(plan.new_items)
            assert after["User"] == before["User"] + len(plan.new_users)
            batch = Batch.objects.get(name=plan.batch_name)
            # Each item's counter matches its stored annotations.
            for item in batch.items.all():
                assert item.n_annotations == item.annotations.count()


def test_nul_in_a_comment_is_a_line_error(existing):
    # Found on PostgreSQL: JSON's \u0000 escape put a NUL into the comment (a server error).
    data = (
        b'{"item_id": "old-2", "annotator": "ann-a", "coherence": 3, "comment": "fine"}\n'
        b'{"item_id": "old-1", "annotator": "ann-a", "coherence": 3, "comment": "a\\u0000b"}\n'
    )
    before = row_counts(*MODELS)
    with pytest.raises(ImportRefused) as refused:
        annotations_import_file(data=data, filename="f.jsonl", batch_name="old")
    assert [str(e) for e in refused.value.errors] == ["line 2, key `comment`: contains a NUL character"]
    assert row_counts(*MODELS) == before
