"""Hostile text from uploads, annotators and judges is shown escaped on every page and in the
HTML export, and defused in every CSV export. (The browser test tests/browser/test_untrusted_text.py
checks the same pages in Chromium: no script runs, no dialog opens.)"""

import csv
import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape

from annotator.models import Item, Judge, JudgeScore
from annotator.reports.exports.csv_safe import DANGEROUS_START, PLAIN_NUMBER
from annotator.reports.exports.formats import EXPORT_FORMATS as EXPORTS
from tests.annotator import hostile
from tests.factories import make_annotation, make_batch, make_user, upload_storage_at

pytestmark = pytest.mark.django_db

CSV_EXPORTS = tuple(f for f in EXPORTS if f.endswith(".csv"))  # every CSV export, new ones included


@pytest.fixture
def world():
    return hostile.build()


def client(world, role):
    c = Client()
    c.force_login(world["users"][role])
    return c


def page_urls(world) -> list[tuple[str, str]]:
    """(role, url) of every page that shows hostile text."""
    batch, items = world["batch"], world["items"]
    return [
        ("annotator", reverse("home")),
        ("annotator", reverse("annotate_queue")),
        ("annotator", reverse("annotate_next", args=[batch.pk])),
        ("annotator", reverse("annotate_mine", args=[batch.pk])),
        ("annotator", reverse("annotation_edit", args=[world["own"].pk])),
        ("researcher", reverse("report_list")),
        ("researcher", reverse("report_batch", args=[batch.pk])),
        *[("researcher", reverse("report_item", args=[item.pk])) for item in items],
        ("researcher", reverse("judges")),
        ("researcher", reverse("report_export", args=[batch.pk, "html"])),
        ("researcher", reverse("adjudication_queue", args=[batch.pk])),
        ("researcher", reverse("adjudication_item", args=[items[0].pk])),
        ("admin", reverse("assignment_overview")),
        ("admin", reverse("assignment_batch", args=[batch.pk])),
        ("researcher", reverse("api_tokens")),
    ]


def assert_inert(body: str, where: str) -> None:
    for payload in hostile.PAYLOADS:
        assert payload not in body, f"{where}: {payload!r} is in the page unescaped"
    assert escape(hostile.SHORT) in body, f"{where}: the hostile text is not shown at all"


def test_every_page_shows_hostile_text_escaped(world):
    for role, url in page_urls(world):
        response = client(world, role).get(url)
        assert response.status_code == 200, url
        assert_inert(response.content.decode(), url)


def test_the_rating_page_shows_every_hostile_field(world):
    body = client(world, "annotator").get(reverse("annotate_next", args=[world["batch"].pk])).content.decode()
    for field in (
        "prompt",
        "response",
        "context",
        "expected",
        "constraint one",
        "turn one",
        "turn two",
        "turn three",
        "description",
        "level",
    ):
        assert escape(hostile.text(field)) in body, field


def test_gold_items_and_training_feedback_show_hostile_text_escaped(world):
    from annotator.models import GoldAnswer, GoldItem, QualityRule

    batch = world["batch"]
    QualityRule.objects.create(batch=batch, training_items=1)
    dims = batch.rubric_obj.dimension_keys
    GoldItem.objects.create(
        batch=batch,
        item_id="t" + hostile.SHORT,
        kind="training",
        prompt=hostile.text("gold prompt"),
        response=hostile.HOSTILE,
        scores=dict.fromkeys(dims, 3),
        flags=[],
        explanation=hostile.text("explanation"),
    )
    c = client(world, "annotator")
    user = world["users"]["annotator"]
    GoldAnswer.objects.filter(annotator=user).delete()
    body = c.get(reverse("annotate_next", args=[batch.pk])).content.decode()
    assert_inert(body, "training item")
    assert escape(hostile.text("gold prompt")) in body
    answer = GoldAnswer.objects.get(annotator=user, submitted_at__isnull=True)
    feedback = c.post(
        reverse("gold_submit", args=[answer.pk]), {f"score_{d}": "3" for d in dims}
    ).content.decode()
    assert_inert(feedback, "training feedback")
    assert escape(hostile.text("explanation")) in feedback


def test_upload_preview_shows_hostile_cells_and_errors_escaped(world, settings, tmp_path):
    upload_storage_at(settings, tmp_path)
    response = client(world, "admin").post(
        reverse("upload_preview"),
        {
            "mode": "batch",
            "name": "upload " + hostile.SHORT,
            "k": 3,
            "file": SimpleUploadedFile("hostile.csv", hostile.hostile_upload_csv()),
        },
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert_inert(body, "upload preview")
    assert 'class="row-error"' in body  # the bad row is listed, with its hostile item id escaped


def test_judge_import_errors_echo_hostile_values_escaped(world):
    data = f'item_id,dimension,score,reason\n"{hostile.SHORT}",coherence,0.5,x\n'.encode()
    response = client(world, "researcher").post(
        reverse("judge_import_scores"),
        {
            "batch": world["batch"].name,
            "judge": "j",
            "scale": "0-1",
            "file": SimpleUploadedFile("s.csv", data),
        },
    )
    assert response.status_code == 400
    assert_inert(response.content.decode(), "judge import errors")


def test_json_export_is_json_not_html(world):
    response = client(world, "researcher").get(reverse("report_export", args=[world["batch"].pk, "json"]))
    assert response["Content-Type"] == "application/json"
    assert response["Content-Disposition"].startswith("attachment")
    assert json.loads(response.content)["batch"] == world["batch"].name


def test_responses_forbid_framing_and_sniffing(world):
    response = client(world, "researcher").get(reverse("report_batch", args=[world["batch"].pk]))
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"


def _cells(text: str) -> list[str]:
    return [cell for row in csv.reader(io.StringIO(text)) for cell in row]


@pytest.mark.parametrize("fmt", CSV_EXPORTS)
def test_every_csv_export_defuses_formulas(db, fmt):
    """Every CSV export, through the page, with formula-like text in every field a person can fill."""
    formula = '=HYPERLINK("http://evil.example","x")'
    batch = make_batch("@batch", n_items=2, k=3, systems=("-sys", "+sys"))
    Item.objects.filter(batch=batch).update(prompt=formula, response="+cmd", prompt_id="@p")
    raters = [make_user(f"-rater{i}") for i in range(3)]
    for n, item in enumerate(batch.items.order_by("position")):
        Item.objects.filter(pk=item.pk).update(item_id=f"={n}+1")
        for i, rater in enumerate(raters):
            make_annotation(item, rater, {"coherence": 1 + i, "fluency": 5 - i}, comment="\t=1+1")
    judge = Judge.objects.create(name="=judge", model="@model")
    JudgeScore.objects.bulk_create(
        JudgeScore(
            judge=judge,
            item=item,
            dimension="coherence",
            raw_value=0.5,
            scale_min=0,
            scale_max=1,
            value=3.0,
            reason="-reason",
            raw_output="=raw",
            imported_at=timezone.now(),
        )
        for item in batch.items.all()
    )
    c = Client()
    c.force_login(make_user("reader", role="researcher"))
    response = c.get(reverse("report_export", args=[batch.pk, fmt]))
    assert response.status_code == 200
    text = b"".join(response.streaming_content if response.streaming else [response.content]).decode()
    cells = _cells(text)
    assert len(cells) > 5
    dangerous = [c for c in cells if c.startswith(DANGEROUS_START) and not PLAIN_NUMBER.match(c)]
    assert not dangerous, f"{fmt}: formula-like cells {dangerous[:5]}"
    if fmt in ("scores.csv", "annotations.csv"):
        assert "'=0+1" in cells  # user text is kept, defused
    if fmt == "judges.csv":
        assert "'=judge" in cells


def test_the_annotation_template_has_no_formulas(db):
    c = Client()
    c.force_login(make_user("someone"))
    text = b"".join(c.get(reverse("annotation_template")).streaming_content).decode()
    assert not [
        cell for cell in _cells(text) if cell.startswith(DANGEROUS_START) and not PLAIN_NUMBER.match(cell)
    ]
