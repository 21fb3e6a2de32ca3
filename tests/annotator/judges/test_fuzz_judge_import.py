"""Fuzzed judge-score and pairwise-verdict uploads through the judges page (form, parser, service).

The parsers' own property tests are in test_judge_import.py; here the whole request runs, with
random form fields as well as random files: the answer is a redirect with everything saved or a
400 page with the errors and no row changed, never a server error.
"""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from hypothesis import event, given
from hypothesis import strategies as st

from annotator.models import Judge, JudgeScore, PairwiseVerdict
from hcs.judge_output import JudgeOutputError, extract_json
from tests.annotator.fuzz_support import (
    FORMULAS,
    FUZZ,
    NASTY,
    record,
    rolled_back,
    row_counts,
    upload_files,
)
from tests.factories import make_batch, make_user

pytestmark = pytest.mark.django_db

ITEMS = ["judged-0", "judged-1", "judged-2", "judged-3", "nope", ""]
RAW = [
    json.dumps({"coherence": {"score": 4, "reasoning": "<script>alert(1)</script>"}}),
    '```json\n{"score": 0.3, "reason": "<img src=x onerror=alert(1)>"}\n```',
    "Score: 4",
    "The answer is 2/5.",
    '{"winner": "enhanced", "confidence": 0.8}',
    '{"winner": "x"}',
    "9" * 5000,
    "[" * 5000,
    "",
]
SCORE_COLUMNS = ["item_id", "dimension", "score", "reason", "raw_output"]
SCORE_CELLS = {
    "item_id": ITEMS,
    "dimension": ["coherence", "fluency", "overall", "Coherence", "bad", ""],
    "score": ["0", "0.5", "1", "3", "5", "1.5", "-1", "nan", "inf", "1e309", "9" * 400, "", "=1+1"],
    "reason": ["because", "<script>alert(1)</script>", *FORMULAS],
    "raw_output": RAW,
}
VERDICT_COLUMNS = [
    "prompt_id",
    "winner",
    "confidence",
    "baseline_item_id",
    "enhanced_item_id",
    "reason",
    "raw_output",
]
VERDICT_CELLS = {
    "prompt_id": ["p0", "p1", "p9", ""],
    "winner": ["baseline", "enhanced", "tie", "better", "", "=1+1"],
    "confidence": ["0", "0.9", "1", "1.4", "-0.1", "nan", ""],
    "baseline_item_id": ITEMS,
    "enhanced_item_id": ITEMS,
    "reason": ["because", "<script>alert(1)</script>"],
    "raw_output": RAW,
}
TEXT = st.sampled_from(
    ["gpt-judge", "gpt-judge", "other", "", " ", "j" * 201, "<b>j</b>", "\x00", "m1", "m2"]
)
MODELS = (Judge, JudgeScore, PairwiseVerdict)


@pytest.fixture
def researcher(db):
    make_batch("judged", n_items=4, systems=("base", "enh"))
    make_user("boss", role="admin")  # a second batch owner is irrelevant; roles only
    client = Client()
    client.force_login(make_user("res", role="researcher"))
    return client


def _post(client, url, fields, file):
    data, filename = file
    body = {k: v for k, v in fields.items() if v is not None}
    if file is not None:
        body["file"] = SimpleUploadedFile(filename, data)
    return client.post(url, body)


def _check(client, url, fields, file):
    with rolled_back():
        before = row_counts(*MODELS)
        response = _post(client, url, fields, file)
        assert response.status_code < 500
        if response.status_code == 302:
            event("imported")
            assert row_counts(*MODELS) != before
        else:
            event(f"refused {response.status_code}")
            assert response.status_code == 400
            assert row_counts(*MODELS) == before


@FUZZ
@given(
    file=upload_files(SCORE_COLUMNS, SCORE_CELLS, required=3),
    batch=st.sampled_from(["judged", "judged", "judged", "", "none", "j" * 300]),
    judge=TEXT,
    model=TEXT,
    template=TEXT,
    scale=st.sampled_from(["0-1", "1-5", "1-4", "1-5", "0-10", "", None]),
    lower=st.sampled_from([None, "on", "garbage"]),
)
def test_any_judge_score_upload_is_saved_whole_or_refused(
    researcher, file, batch, judge, model, template, scale, lower
):
    record("judge importer (scores)")
    fields = {
        "batch": batch,
        "judge": judge,
        "model": model,
        "template": template,
        "scale": scale,
        "lower_is_better": lower,
    }
    _check(researcher, reverse("judge_import_scores"), fields, file)


@FUZZ
@given(
    file=upload_files(VERDICT_COLUMNS, VERDICT_CELLS, required=2),
    batch=st.sampled_from(["judged", "judged", "", "none"]),
    judge=TEXT,
    model=TEXT,
    baseline=st.sampled_from(["base", "enh", "", "nope", None]),
)
def test_any_verdict_upload_is_saved_whole_or_refused(researcher, file, batch, judge, model, baseline):
    record("judge importer (verdicts)")
    fields = {"batch": batch, "judge": judge, "model": model, "template": "", "baseline_system": baseline}
    _check(researcher, reverse("judge_import_verdicts"), fields, file)


@pytest.mark.parametrize(
    "text", ["9" * 5000, "[" * 5000, "```json\n" + "9" * 5000 + "\n```", '{"a": ' + "9" * 5000 + "}"]
)
def test_hostile_judge_output_is_a_judge_output_error(text):
    # Found while fuzzing: these raised ValueError / RecursionError out of the parser.
    with pytest.raises(JudgeOutputError):
        extract_json(text)


def test_nasty_texts_in_every_field_give_a_page_not_an_error(researcher):
    for value in NASTY:
        response = _post(
            researcher,
            reverse("judge_import_scores"),
            {"batch": value, "judge": value, "model": value, "scale": value},
            (b"item_id,dimension,score\njudged-0,coherence,0.5\n", "s.csv"),
        )
        assert response.status_code == 400


def test_nul_in_a_judge_reason_is_a_400_not_a_server_error(researcher):
    # Found on PostgreSQL: JSON's \u0000 escape put a NUL into the reason (a server error).
    data = b'{"item_id": "judged-0", "dimension": "coherence", "score": 0.5, "reason": "\\u0000"}\n'
    response = _post(
        researcher,
        reverse("judge_import_scores"),
        {"batch": "judged", "judge": "j", "scale": "0-1"},
        (data, "s.jsonl"),
    )
    assert response.status_code == 400
    assert b"contains a NUL character" in response.content
    assert not JudgeScore.objects.exists()
