"""Random field values posted to the rating page (submit, skip, edit) through the test client:
never a server error; a refused form saves nothing; a saved one stores scores on the rubric's scale."""

import pytest
from django.test import Client
from django.urls import reverse
from hypothesis import event, given
from hypothesis import strategies as st

from annotator.models import Annotation, AnnotationRevision, Assignment, Item, Score
from annotator.rating.services.assignment import item_next_for_annotator
from tests.annotator.fuzz_support import (
    FORMULAS,
    FUZZ,
    NASTY,
    record,
    rolled_back,
    row_counts,
)
from tests.factories import make_annotation, make_batch, make_user

pytestmark = pytest.mark.django_db

DIMENSIONS = ["coherence", "relevance", "instruction_following", "safety_compliance", "fluency"]
FLAGS = [
    "ignores_hard_constraint",
    "major_factual_impossibility",
    "unsafe_suggestion",
    "partial_compliance",
    "prompt_ambiguous",
]
VALUE = st.one_of(
    st.sampled_from(
        ["1", "2", "3", "4", "5"] * 4 + ["0", "6", "3.0", "٣", " 4", "-1", "99999999999999999999"]
    ),
    st.sampled_from(NASTY + FORMULAS + ["met", "not_met", "Met", *FLAGS, "c" * 6000]),
    st.text(max_size=8),
)
FIELDS = [f"score_{d}" for d in DIMENSIONS] + [
    "constraint_0",
    "constraint_1",
    "constraint_2",
    "constraint_-1",
    "flags",
    "comment",
    "skip_reason",
    "csrfmiddlewaretoken",
    "score_",
    "x" * 300,
]
MODELS = (Annotation, Score, AnnotationRevision, Assignment)


@st.composite
def form_data(draw):
    """A complete, plausible rating with a few fields changed at random, or random fields only."""
    data = {}
    if draw(st.booleans()):
        data = {f"score_{d}": draw(st.sampled_from(["1", "2", "3", "4", "5"])) for d in DIMENSIONS}
        data.update(
            constraint_0=draw(st.sampled_from(["met", "not_met"])),
            constraint_1=draw(st.sampled_from(["met", "not_met"])),
            flags=draw(st.lists(st.sampled_from(FLAGS), unique=True, max_size=2)),
            comment=draw(st.sampled_from(["", "ok", *NASTY, *FORMULAS])),
            skip_reason=draw(st.sampled_from(["", "unclear", "a\x00b", *NASTY])),
        )
        n_changes = draw(st.integers(0, 2))
    else:
        n_changes = draw(st.integers(0, len(FIELDS)))
    for name in draw(st.lists(st.sampled_from(FIELDS), unique=True, min_size=n_changes, max_size=n_changes)):
        if draw(st.integers(0, 5)) == 0:
            data[name] = draw(st.lists(VALUE, min_size=0, max_size=3))  # a repeated key
        else:
            data[name] = draw(VALUE)
    return data


@pytest.fixture
def rater(db):
    batch = make_batch("rated", n_items=3, k=3)
    user = make_user("rater")
    lease = item_next_for_annotator(batch=batch, annotator=user)
    done = make_annotation(batch.items.exclude(pk=lease.item_id).first(), user, {d: 3 for d in DIMENSIONS})
    client = Client()
    client.force_login(user)
    return {"client": client, "item": lease.item, "own": done, "k": batch.k}


def _assert_stored_scores_in_scale():
    assert not Score.objects.exclude(value__gte=1, value__lte=5).exists()
    for item in Item.objects.all():
        assert item.n_annotations == item.annotations.count() <= item.batch.k


@FUZZ
@given(data=form_data(), htmx=st.booleans(), action=st.sampled_from(["submit", "submit", "skip", "edit"]))
def test_any_rating_post_is_answered_without_a_server_error(rater, data, htmx, action):
    record(f"rating form ({action})")
    client = rater["client"]
    url = {
        "submit": reverse("annotate_submit", args=[rater["item"].pk]),
        "skip": reverse("annotate_skip", args=[rater["item"].pk]),
        "edit": reverse("annotation_edit", args=[rater["own"].pk]),
    }[action]
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    with rolled_back():
        before = row_counts(*MODELS)
        response = client.post(url, data, **headers)
        status = response.status_code
        assert status < 500
        event(f"{action} {status}")
        if status == 422:
            assert row_counts(*MODELS) == before
            assert b"rate-errors" in response.content  # the page lists what is wrong
        else:
            assert status in (200, 302)
            after = row_counts(*MODELS)
            if action == "submit":
                assert after["Annotation"] - before["Annotation"] in (0, 1)
            if action == "edit":
                assert after["Annotation"] == before["Annotation"]
        _assert_stored_scores_in_scale()


def test_a_skip_reason_with_a_nul_character_is_refused(rater):
    # Found on PostgreSQL: the skip reason, read straight from the POST, reached the database with
    # a NUL character, which PostgreSQL refuses (a server error).
    before = row_counts(*MODELS)
    response = rater["client"].post(
        reverse("annotate_skip", args=[rater["item"].pk]), {"skip_reason": "why\x00"}
    )
    assert response.status_code == 422
    assert b"NUL character" in response.content
    assert row_counts(*MODELS) == before
    assert Assignment.objects.get(item=rater["item"]).state == Assignment.State.LEASED
