"""Exclusions travel with the data: every per-annotation export (scores.csv, annotations.csv and the
API's annotation pages) says which annotations come from an excluded annotator, so a notebook that
filters on it computes with the annotations the report counts."""

import io

import pandas as pd
import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotator.models import Annotation, Batch
from annotator.quality.services.exclusion import (
    annotator_block,
    annotator_exclude,
    annotator_include,
)
from annotator.reports.exports.formats import EXPORT_FORMATS, export_chunks
from annotator.reports.selectors.batch_report import batch_report
from tests.factories import make_annotation, make_batch, make_user

pytestmark = pytest.mark.django_db
DIMS = ["coherence", "relevance", "instruction_following", "safety_compliance", "fluency"]


@pytest.fixture
def batch():
    batch = make_batch("excl-export", n_items=5, k=4, constraints=())
    users = [make_user(f"x{n}") for n in range(4)]
    for i, item in enumerate(batch.items.order_by("position")):
        for j, user in enumerate(users):
            make_annotation(
                item, user, {d: 1 + (i * j + n) % 5 for n, d in enumerate(DIMS)}, submitted_at=timezone.now()
            )
    annotator_exclude(batch=batch, annotator=users[1], reason="random clicking")
    annotator_block(batch=batch, annotator=users[2], reason="failed checks")
    return batch


def _frame(batch: Batch, key: str) -> pd.DataFrame:
    return pd.read_csv(io.StringIO("".join(export_chunks(EXPORT_FORMATS[key], batch=batch)), newline=""))


@pytest.mark.parametrize("key", ["scores.csv", "annotations.csv"])
def test_the_csv_exports_mark_excluded_annotators_as_a_logical_column(batch, key):
    frame = _frame(batch, key)
    assert list(frame.columns)[-1] == "excluded" and frame["excluded"].dtype == bool
    marked = frame.groupby("annotator")["excluded"].agg(["min", "max"])
    assert marked.to_dict("index") == {
        "x0": {"min": False, "max": False},
        "x1": {"min": True, "max": True},
        "x2": {"min": True, "max": True},
        "x3": {"min": False, "max": False},
    }


def test_the_notebook_route_keeps_what_the_report_keeps(batch):
    frame = _frame(batch, "annotations.csv")
    kept = frame[~frame["excluded"]]
    report = batch_report(batch=batch)
    assert sorted(kept["annotator"].unique()) == ["x0", "x3"]
    assert len(kept) == 10 and sum(d.agreement.n_ratings for d in report.dimensions) == 10 * len(DIMS)


def test_including_again_clears_the_mark(batch):
    annotator_include(batch=batch, annotator=batch.standings.get(annotator__username="x1").annotator)
    frame = _frame(batch, "scores.csv")
    assert sorted(frame[frame["excluded"]]["annotator"].unique()) == ["x2"]


def test_an_exported_file_with_the_column_imports_back(batch, tmp_path):
    exported = tmp_path / "annotations.csv"
    exported.write_text("".join(export_chunks(EXPORT_FORMATS["annotations.csv"], batch=batch)), newline="")
    call_command("import_annotations", str(exported), "--batch", "copy")
    assert Annotation.objects.filter(item__batch__name="copy").count() == 20


def test_the_api_pages_carry_the_mark(batch):
    from tests.annotator.api.conftest import ApiClient, token_for

    client = ApiClient(token_for(make_user("reader", role="researcher")))
    rows = client.get(f"/batches/{batch.pk}/annotations", limit=100).json()["items"]
    assert {(r["annotator"], r["excluded"]) for r in rows} == {
        ("x0", False),
        ("x1", True),
        ("x2", True),
        ("x3", False),
    }


def test_the_report_page_download_has_the_column(batch):
    client = Client()
    client.force_login(make_user("reader", role="researcher"))
    response = client.get(reverse("report_export", args=[batch.pk, "scores.csv"]))
    text = b"".join(response.streaming_content).decode()
    assert text.splitlines()[0].endswith(",submitted_at,excluded")
