"""Fuzzed rubric files on the upload form: a rubric the form accepts works everywhere after it
(the batch saves, the rating page renders and takes a rating, the report builds); any other file
is a form error. Never a server error."""

import copy
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from hypothesis import event, given
from hypothesis import strategies as st

from annotator.reports.selectors.batch_report import batch_report
from annotator.uploads.forms import UploadForm
from annotator.uploads.services.batches import batch_import_file
from hcs.rubric import Rubric
from tests.annotator.fuzz_support import FUZZ, NASTY, record, rolled_back
from tests.factories import make_user

pytestmark = pytest.mark.django_db

ITEMS = b"item_id,prompt,response\na,p,r\nb,p,r2\n"
JSON_VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-3, 12),
        st.floats(allow_nan=True),
        st.sampled_from(NASTY[:28]),
        st.text(max_size=10),
        st.just("k" * 65),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)


def _paths(value, prefix=()):
    """Every path into the rubric's JSON (dict keys and list indices)."""
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            yield from _paths(child, (*prefix, i))


DEFAULT = Rubric.default().to_dict()
PATHS = [p for p in _paths(DEFAULT) if p]


@st.composite
def rubric_files(draw):
    data = copy.deepcopy(DEFAULT)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(PATHS))
        target = data
        try:
            for step in path[:-1]:
                target = target[step]
            if draw(st.integers(0, 4)) == 0 and isinstance(target, dict):
                target.pop(path[-1], None)
            else:
                target[path[-1]] = draw(JSON_VALUES)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier change removed or replaced this path
    return json.dumps(data).encode()


def _form(rubric_bytes):
    return UploadForm(
        {"mode": "batch", "name": "fuzzed rubric", "k": 3},
        {
            "file": SimpleUploadedFile("f.csv", ITEMS),
            "rubric_file": SimpleUploadedFile("r.json", rubric_bytes),
        },
    )


@pytest.fixture
def annotator_client(db):
    client = Client()
    client.force_login(make_user("rater"))
    return client


@FUZZ
@given(rubric_bytes=rubric_files())
def test_a_rubric_the_form_accepts_works_everywhere(annotator_client, rubric_bytes):
    record("rubric file")
    form = _form(rubric_bytes)
    if not form.is_valid():
        event("form error")
        assert form.errors
        return
    event("accepted")
    rubric = form.cleaned_data["rubric_file"]
    with rolled_back():
        batch = batch_import_file(data=ITEMS, filename="f.csv", name="fuzzed rubric", k=3, rubric=rubric)
        page = annotator_client.get(reverse("annotate_next", args=[batch.pk]))
        assert page.status_code == 200
        item = page.context["item"]
        data = {f"score_{d.key}": str(rubric.scale_max) for d in rubric.dimensions}
        response = annotator_client.post(reverse("annotate_submit", args=[item.pk]), data)
        assert response.status_code in (302, 422)
        batch_report(batch=batch, n_resamples=20)


def test_a_rubric_with_a_nul_character_is_a_form_error():
    # Found on PostgreSQL: a label with \u0000 passed the form and the batch save failed (a server error).
    data = copy.deepcopy(DEFAULT)
    data["dimensions"][0]["label"] = "Coherence\x00"
    form = _form(json.dumps(data).encode())
    assert not form.is_valid()
    assert "NUL" in str(form.errors["rubric_file"])


@pytest.mark.parametrize(
    "path, value, message",
    [
        (("examples", 0), None, "examples must be JSON objects"),
        (("dimensions", 0, "label"), 5, "label must be text"),
        (("dimensions", 0, "key"), "k" * 65, "keys must be text of 1 to 64"),
        (("flags", 0, "description"), ["x"], "description must be text"),
        (("exclusive_flags", 0), [1, 2], "exclusive_flags"),
    ],
)
def test_malformed_parts_of_a_rubric_are_form_errors(path, value, message):
    # Found by the fuzz test: these passed the form and failed later, when the preview stored the
    # rubric, the report drew its plots or PostgreSQL stored a score (a server error each time).
    data = copy.deepcopy(DEFAULT)
    target = data
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    form = _form(json.dumps(data).encode())
    assert not form.is_valid()
    assert message in str(form.errors["rubric_file"])


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_a_rubric_with_nan_or_infinity_is_a_form_error(constant):
    # Found by the fuzz test: Python's json accepts these, the database's JSON check refused the
    # batch, and the refusal was misreported as "a batch with that name already exists".
    text = json.dumps(DEFAULT).replace(
        '"prompt": "Plan a route', f'"prompt": {constant}, "x": "Plan a route', 1
    )
    form = _form(text.encode())
    assert not form.is_valid()
    assert "not UTF-8 JSON" in str(form.errors["rubric_file"])
    assert constant in str(form.errors["rubric_file"])
